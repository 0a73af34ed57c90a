//! The web app in a real Chromium (playwright-core driving Debian's chromium), through nginx on
//! the real stack: sign-up, a fast with its diary, history, stats, settings, the plan starting a
//! fast, the pause, the not-found page, offline use and sign-out. The steps are in
//! `web/tests/e2e.mjs`; this test starts the stack and runs them with `node`.

mod common;

use std::path::Path;
use std::process::Command;

use common::start_stack;

fn web_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../web"))
}

/// Runs one of the Node scripts under `web/tests` against `base`, returning its output on failure.
fn run_node(script: &str, base: &str, extra: &[(&str, &str)]) -> Result<String, String> {
    let dir = web_dir();
    assert!(
        dir.join("dist/index.html").is_file() && dir.join("node_modules/playwright-core").is_dir(),
        "the web app is not built: run `npm ci && npm run build` in web/ (scripts/test does)"
    );
    let out = Command::new("node")
        .arg(format!("tests/{script}"))
        .current_dir(dir)
        .env("BASE", base)
        .envs(extra.iter().copied())
        .output()
        .expect("run node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_uses_the_web_app_in_chromium() {
    let stack = start_stack().await;
    let base = stack.base();
    let result = tokio::task::spawn_blocking(move || run_node("e2e.mjs", &base, &[]))
        .await
        .expect("join");
    match result {
        Ok(out) => assert!(out.contains("e2e: all steps passed"), "{out}"),
        Err(out) => panic!(
            "{out}\n--- auth ---\n{}\n--- nutrition-api ---\n{}",
            stack.auth.log(),
            stack.nutrition.log()
        ),
    }
}
