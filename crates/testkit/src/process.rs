//! Running the real binaries as child processes with an exact environment.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `bin args…` with only `env` (plus `PATH`) in its environment and waits for it. The working
/// directory is a fresh temporary one, so no developer `.env` file is read.
pub fn run(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    command(bin, args, env).output().expect("run binary")
}

/// The same command, not yet started (for tests that start several at once).
pub fn command(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env_clear()
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// The lines a process wrote to stderr, without the empty ones.
pub fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}
