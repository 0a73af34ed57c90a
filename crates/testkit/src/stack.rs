//! The real binaries and a real nginx as child processes, for end-to-end tests.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The directory holding the workspace's binaries: `E2E_BIN_DIR`, else the profile directory
/// this test executable was built into (`target/<profile>/deps/..`).
pub fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("E2E_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("target/<profile>/deps layout")
}

/// Path of a workspace binary, which must have been built (`cargo build --bins`).
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first (cargo build --workspace --bins)",
        path.display()
    );
    path
}

/// A port that was free a moment ago on 127.0.0.1, for a process started later to bind.
///
/// It is drawn below the kernel's ephemeral range (32768 and up on Linux), from which every
/// server of a test bound to port 0, and every outgoing connection, takes its port: a port the
/// kernel handed out and took back at once could be handed to another test's server before the
/// process meant for it binds it, and requests meant for one service would reach another.
///
/// Between the draw and the bind a stack may spend seconds migrating its databases, and the
/// tests run as parallel processes; so the port is also reserved, by a lock on a file named
/// after it, until this process exits. No other caller, here or in another test process, is
/// handed it meanwhile.
pub fn free_port() -> u16 {
    use rand::Rng;
    let dir = std::env::temp_dir().join("testkit-ports");
    fs::create_dir_all(&dir).expect("create the port reservation directory");
    let mut rng = rand::rng();
    for _ in 0..1000 {
        let port = rng.random_range(20_000..32_000);
        let lock = fs::File::create(dir.join(port.to_string())).expect("create a port lock file");
        // Locked first, so that the probe below never binds, for that instant, a port another
        // process reserved and is starting its server on. The kernel drops the lock when the
        // process ends, however it ends.
        if lock.try_lock().is_ok() && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            RESERVED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(lock);
            return port;
        }
    }
    panic!("no free port between 20000 and 32000 on 127.0.0.1")
}

/// The lock files of the ports this process reserved, held open until it exits.
static RESERVED: std::sync::Mutex<Vec<fs::File>> = std::sync::Mutex::new(Vec::new());

/// A scratch directory removed on drop.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{label}-{}", crate::unique_db_name()));
        fs::create_dir_all(&path).expect("create scratch directory");
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A child process whose output goes to a log file, killed on drop.
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
    allow_server_errors: bool,
}

impl Process {
    /// Starts `program args…` with exactly `env` (plus `PATH`), logging to `log_dir/<name>.log`.
    pub fn start(
        name: &str,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        log_dir: &Path,
    ) -> Self {
        let log = log_dir.join(format!("{name}.log"));
        let out = fs::File::create(&log).expect("create log file");
        let err = out.try_clone().expect("clone log file");
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .current_dir(log_dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        if let Ok(path) = std::env::var("PATH") {
            cmd.env("PATH", path);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {name} ({}): {e}", program.display()));
        Self {
            name: name.to_owned(),
            child,
            log,
            allow_server_errors: false,
        }
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process has exited on its own.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit.
    pub fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// The process id, e.g. to read `/proc/<id>/limits`.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The lines of the log that show a server error: a 5xx answer other than 503 (the HTTP
    /// services log each with a fixed message) or a panic. Empty for a healthy run.
    pub fn server_errors(&self) -> Vec<String> {
        server_errors(&self.log())
    }

    /// Stops checking the log when the process is dropped, for a test that provokes failures.
    pub fn allow_server_errors(&mut self) {
        self.allow_server_errors = true;
    }
}

/// Text a service writes for every 5xx answer other than 503 (see `service_kit::http`).
const SERVER_ERROR_LOG: &str = "answered a server error";

/// The 5xx answers and panics in a service's log (either log format).
pub fn server_errors(log: &str) -> Vec<String> {
    log.lines()
        .map(without_colours)
        .filter(|l| l.contains(SERVER_ERROR_LOG) || l.contains("panicked at"))
        .collect()
}

/// `line` without ANSI colour sequences (`ESC [ … m`), which the pretty format writes even to a
/// file.
fn without_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Memory figures of a running process from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Resident set size now (`VmRSS`).
    pub rss_kib: u64,
    /// The highest resident set size so far (`VmHWM`).
    pub peak_kib: u64,
}

pub fn memory(pid: u32) -> Option<Memory> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some(Memory {
        rss_kib: field("VmRSS:")?,
        peak_kib: field("VmHWM:")?,
    })
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // A test whose service answered a 500 or panicked fails, even if every assertion held.
        if !self.allow_server_errors && !std::thread::panicking() {
            let errors = self.server_errors();
            assert!(
                errors.is_empty(),
                "{} logged server errors:\n{}",
                self.name,
                errors.join("\n")
            );
        }
    }
}

/// nginx in front of local services, configured from `deploy/nginx.local.conf.template`.
pub struct Nginx {
    pub port: u16,
    process: Process,
    _dir: ScratchDir,
}

impl Nginx {
    /// Starts nginx on a free port, routing to the given `host:port` upstreams.
    pub fn start(auth: &str, nutrition: &str, licence: &str) -> Self {
        Self::start_on(free_port(), auth, nutrition, licence)
    }

    /// Starts nginx on `port` (chosen beforehand, when the services must know the public address).
    pub fn start_on(port: u16, auth: &str, nutrition: &str, licence: &str) -> Self {
        let dir = ScratchDir::new("nginx");
        let template_path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nginx.local.conf.template");
        let template = fs::read_to_string(&template_path).expect("read nginx template");
        let prefix = dir.path().to_string_lossy().into_owned();
        let conf = template
            .replace("@@LISTEN@@", &format!("127.0.0.1:{port}"))
            .replace("@@AUTH@@", auth)
            .replace("@@NUTRITION@@", nutrition)
            .replace("@@LICENCE@@", licence)
            .replace("@@PREFIX@@", &prefix)
            .replace("@@WEB@@", &web_dist().to_string_lossy());
        let conf_path = dir.path().join("nginx.conf");
        fs::write(&conf_path, conf).expect("write nginx.conf");
        let program = nginx_binary();
        let error_log = dir.path().join("error.log").to_string_lossy().into_owned();
        let conf_arg = conf_path.to_string_lossy().into_owned();
        let process = Process::start(
            "nginx",
            &program,
            &["-p", &prefix, "-e", &error_log, "-c", &conf_arg],
            &[],
            dir.path(),
        );
        let nginx = Self {
            port,
            process,
            _dir: dir,
        };
        nginx.wait_listening();
        nginx
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("nginx did not listen: {}", self.process.log());
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What nginx wrote to its access log so far.
    pub fn access_log(&self) -> String {
        fs::read_to_string(self._dir.path().join("access.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGKILL on the master would orphan its worker; SIGTERM makes the master stop it first.
        let _ = self.process.terminate(Duration::from_secs(5));
    }
}

/// The built web app nginx serves: `WEB_DIST`, else the workspace's `web/dist` (built by
/// `npm run build`; without it the app's pages are 404s and every other route works).
pub fn web_dist() -> PathBuf {
    if let Ok(dir) = std::env::var("WEB_DIST") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist")
}

/// `NGINX`, else nginx on the `PATH`, else Debian's location.
pub fn nginx_binary() -> PathBuf {
    if let Ok(path) = std::env::var("NGINX") {
        return PathBuf::from(path);
    }
    std::env::var("PATH")
        .ok()
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("nginx"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/nginx"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_in_both_formats() {
        let log = "2026-11-23T09:00:00Z  INFO auth: auth listening port=1\n\
                   2026-11-23T09:00:01Z \u{1b}[31mERROR\u{1b}[0m http_request: status=500 answered a server error\n\
                   {\"level\":\"ERROR\",\"status\":500,\"message\":\"answered a server error\"}\n\
                   {\"level\":\"WARN\",\"message\":\"readiness check failed\"}\n\
                   {\"level\":\"ERROR\",\"message\":\"licence e-mail refused for good\"}\n\
                   thread 'actix-rt' panicked at src/x.rs:1:1:\n";
        let found = server_errors(log);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].contains("ERROR http_request: status=500"),
            "{found:?}"
        );
        assert!(server_errors("  INFO auth: ok\n WARN auth: slow").is_empty());
    }

    /// Nothing binds the ports handed out here, as in a stack still migrating its databases:
    /// without a reservation, 500 draws from 12,000 ports repeat one almost surely.
    #[test]
    fn a_port_is_handed_out_once_until_its_holder_exits() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..500 {
            let port = free_port();
            assert!(seen.insert(port), "port {port} handed out twice");
        }
    }
}
