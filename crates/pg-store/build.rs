// The migrations are embedded at compile time; without this a new migration directory would not
// be noticed by an incremental build and the binaries would silently lack it.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations-postgres");
}
