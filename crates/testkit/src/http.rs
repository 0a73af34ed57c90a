//! Small HTTP helpers for black-box tests, and the server the fake services of this kit run on.

use std::time::Duration;

/// A client that never follows redirects (tests look at them) and never waits long.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("build HTTP client")
}

/// Serves what `routes` mounts on `listener` with `workers` workers, in the background of the
/// current Tokio runtime, as the fake services of this kit do; the handle stops it.
pub fn serve(
    listener: std::net::TcpListener,
    workers: usize,
    routes: impl Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
) -> actix_web::dev::ServerHandle {
    let server =
        actix_web::HttpServer::new(move || actix_web::App::new().configure(routes.clone()))
            .workers(workers)
            .listen(listener)
            .expect("listen")
            .run();
    let handle = server.handle();
    tokio::spawn(server);
    handle
}

/// The value of the response's header `name`, when it has one that is text.
pub fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Status and JSON body of a GET.
pub async fn get_json(url: &str) -> (u16, serde_json::Value) {
    let resp = client().get(url).send().await.expect("GET");
    let status = resp.status().as_u16();
    let body = resp.json().await.unwrap_or(serde_json::Value::Null);
    (status, body)
}

/// The value of one series of the service's `/metrics` at `base`, named with its labels as it
/// is printed.
pub async fn metric(base: &str, series: &str) -> f64 {
    let text = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in the metrics:\n{text}"))
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

/// One answer read off a connection by hand: its head, lower-cased, and its body.
pub struct RawAnswer {
    pub head: String,
    pub body: Vec<u8>,
}

impl RawAnswer {
    pub fn status_line(&self) -> &str {
        self.head.lines().next().unwrap_or_default()
    }

    /// The header lines but `date`, sorted: what two servers' answers to one request share.
    pub fn fields_but_date(&self) -> Vec<&str> {
        let mut fields: Vec<&str> = self
            .head
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty() && !l.starts_with("date:"))
            .collect();
        fields.sort_unstable();
        fields
    }
}

/// Writes `request` on `io` as it is and reads one answer: the head, then a body of its
/// Content-Length (none when the request is a HEAD). For what a client library would not send
/// or would hide: several requests on one chosen connection, a head byte for byte.
pub async fn raw_exchange(io: &mut tokio::net::TcpStream, request: &str) -> RawAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    io.write_all(request.as_bytes()).await.expect("send");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(io.read_u8().await.expect("an answer"));
    }
    let head = String::from_utf8(head)
        .expect("a text head")
        .to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |l| l.trim().parse().expect("a length"));
    let mut body = vec![
        0;
        if request.starts_with("HEAD") {
            0
        } else {
            length
        }
    ];
    io.read_exact(&mut body).await.expect("the body");
    RawAnswer { head, body }
}
