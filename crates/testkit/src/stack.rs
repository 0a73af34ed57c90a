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

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

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
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
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
