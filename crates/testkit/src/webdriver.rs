//! A minimal W3C WebDriver client driving headless Chromium through chromedriver, so that tests
//! can use the pages as a person would: load, type, click, follow redirects, read cookies.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stack::{Process, ScratchDir, free_port};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running chromedriver.
pub struct ChromeDriver {
    base: String,
    _process: Process,
    dir: ScratchDir,
}

fn which(name: &str, fallback: &str) -> PathBuf {
    std::env::var("PATH")
        .ok()
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(fallback))
}

impl ChromeDriver {
    pub async fn start() -> Self {
        let dir = ScratchDir::new("chromedriver");
        let port = free_port();
        let program = which("chromedriver", "/usr/bin/chromedriver");
        assert!(
            program.is_file(),
            "chromedriver is not installed (Debian: chromium-driver)"
        );
        let process = Process::start(
            "chromedriver",
            &program,
            &[&format!("--port={port}"), "--allowed-ips=127.0.0.1"],
            &[],
            dir.path(),
        );
        let base = format!("http://127.0.0.1:{port}");
        let http = crate::http::client();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = http
                .get(format!("{base}/status"))
                .send()
                .await
                .ok()
                .map(|r| r.status().is_success())
                .unwrap_or(false);
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not start: {}",
                process.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self {
            base,
            _process: process,
            dir,
        }
    }

    /// A new headless browser window with an empty profile.
    pub async fn session(&self) -> Browser {
        let profile = self
            .dir
            .path()
            .join(format!("profile-{}", crate::unique_db_name()));
        let chromium = which("chromium", "/usr/bin/chromium");
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chromium.to_string_lossy(),
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--no-first-run", "--disable-quic",
                        format!("--user-data-dir={}", profile.to_string_lossy()),
                    ],
                    // The person these tests play reads Italian: pages follow Accept-Language.
                    "prefs": { "intl.accept_languages": "it-IT,it" },
                },
            }},
        });
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        let resp: Value = http
            .post(format!("{}/session", self.base))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("session JSON");
        let id = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {resp}"))
            .to_owned();
        Browser {
            url: format!("{}/session/{id}", self.base),
            http,
        }
    }
}

/// One browser session.
pub struct Browser {
    url: String,
    http: reqwest::Client,
}

impl Browser {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp: Value = req
            .send()
            .await
            .expect("webdriver request")
            .json()
            .await
            .expect("webdriver JSON");
        if resp["value"].get("error").is_some() {
            panic!("webdriver {path}: {}", resp["value"]);
        }
        resp["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    pub async fn current_url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The element matching a CSS selector.
    pub async fn find(&self, css: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await;
        v[ELEMENT].as_str().expect("element id").to_owned()
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let el = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{el}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    pub async fn click(&self, css: &str) {
        let el = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{el}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Runs `script` (a function body; `return` gives the value) in the page and returns its value.
    pub async fn execute(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// The browser's cookies for the current page.
    pub async fn cookies(&self) -> Vec<Value> {
        self.call(reqwest::Method::GET, "/cookie", None)
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Ends the session and its browser.
    pub async fn quit(self) {
        let _ = self.http.delete(&self.url).send().await;
    }

    /// Waits until the current URL satisfies `pred`; returns it.
    pub async fn wait_for_url(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let url = self.current_url().await;
            if pred(&url) || Instant::now() >= deadline {
                return url;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        // Browsers whose session was not quit would outlive chromedriver: end every Chromium
        // that uses a profile under this driver's directory.
        let _ = std::process::Command::new("pkill")
            .args([
                "-f",
                &format!("user-data-dir={}", self.dir.path().to_string_lossy()),
            ])
            .status();
    }
}
