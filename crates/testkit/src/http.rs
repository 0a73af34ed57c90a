//! Small HTTP helpers for black-box tests.

use std::time::Duration;

/// A client that never follows redirects (tests look at them) and never waits long.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("build HTTP client")
}

/// Status and JSON body of a GET.
pub async fn get_json(url: &str) -> (u16, serde_json::Value) {
    let resp = client().get(url).send().await.expect("GET");
    let status = resp.status().as_u16();
    let body = resp.json().await.unwrap_or(serde_json::Value::Null);
    (status, body)
}

/// Polls `url` until it answers `status` or `timeout` passes; returns the last status seen.
pub async fn wait_for_status(url: &str, status: u16, timeout: Duration) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + timeout;
    let client = client();
    let mut last = None;
    loop {
        last = client
            .get(url)
            .send()
            .await
            .ok()
            .map(|r| r.status().as_u16())
            .or(last);
        if last == Some(status) || tokio::time::Instant::now() >= deadline {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
