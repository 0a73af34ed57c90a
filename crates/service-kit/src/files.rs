//! Files sent with `sendfile(2)`, before actix sees the request.
//!
//! actix-web copies every byte of a response body twice in user space, from the file into a
//! chunk and from the chunk into its HTTP/1 write buffer, before the kernel copies it once more
//! into the socket. For a download of hundreds of megabytes those copies are most of its cost.
//! `sendfile(2)` hands the page cache to the socket without any of them, as nginx does.
//!
//! A [`FileRoute`] names one path whose successful answers are files. The front looks at the
//! head of each request on a connection with `MSG_PEEK`, which consumes nothing. When it is a
//! complete GET or HEAD of that path without a body, the route's handler is asked for the
//! answer. If it gives one, the front consumes the head, writes the answer's head and sends the
//! file. If it declines (any answer that is not a file: a bad signature, a missing file, an
//! unsatisfiable range) or the request is anything else, the connection goes to actix
//! untouched, and the app's own route for the same path answers. So the route's refusals have
//! one implementation, and the app's route also serves what the front never sees: a head that
//! arrives in pieces, and requests on a connection that actix already holds.
//!
//! A connection stays with the front as long as its requests are files, so a client that
//! downloads several keeps its connection alive; the first other request hands it to actix.

use std::future::Future;
use std::io;
use std::num::NonZeroU64;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use actix_service::{Service, ServiceFactory, fn_factory, fn_service};
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::web;
use futures_util::future::LocalBoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tracing::Instrument;

use crate::metrics::{InFlight, ServiceMetrics};

/// A request the front offers to a [`FileRoute`]: a GET or HEAD of its path, without a body.
#[derive(Debug)]
pub struct FileRequest {
    /// The query string, without the `?`.
    pub query: String,
    pub headers: HeaderMap,
}

/// A route's answer: a status and headers, and `len` bytes of `file` from `start`.
/// `Content-Length`, `Date` and `Connection` are the front's.
#[derive(Debug)]
pub struct FileReply {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub file: std::fs::File,
    pub start: u64,
    pub len: u64,
}

type Handler = dyn Fn(FileRequest) -> LocalBoxFuture<'static, Option<FileReply>> + Send + Sync;

/// One path whose successful answers are sent by `sendfile(2)`. The handler answers `None` for
/// every request it does not answer with a file; the app must have a route for the same path
/// that answers those, and that answers the rest exactly as the handler does.
#[derive(Clone)]
pub struct FileRoute {
    path: &'static str,
    handler: Arc<Handler>,
}

impl FileRoute {
    pub fn new<F, Fut>(path: &'static str, handler: F) -> Self
    where
        F: Fn(FileRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<FileReply>> + 'static,
    {
        Self {
            path,
            handler: Arc::new(move |request| Box::pin(handler(request))),
        }
    }
}

/// The largest request head the front reads; a longer one goes to actix.
const HEAD_MAX: usize = 8 * 1024;
/// The most headers a request may have for the front; a request with more goes to actix.
const HEADERS_MAX: usize = 32;
/// How long a connection may stay idle between two requests (actix's keep-alive).
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// A client that takes nothing of an answer for this long is cut off, as by nginx's
/// `send_timeout`: it would hold a connection and an open file for ever.
const SEND_STALL: Duration = Duration::from_secs(60);
/// The most one `sendfile(2)` call sends; the next piece of this size is read ahead meanwhile.
const PIECE: usize = 1024 * 1024;
/// How long a closing connection waits for the client's end, so that what the client sent after
/// its request does not turn the close into a reset that could discard the answer.
const LINGER: Duration = Duration::from_secs(1);

/// Puts the front before `http`, the HTTP service of one worker: a connection goes to `http`
/// straight away when there is no file route, and after its file requests otherwise.
pub(crate) fn front<S>(
    http: S,
    files: Option<FileRoute>,
    metrics: web::Data<ServiceMetrics>,
) -> impl ServiceFactory<
    TcpStream,
    Config = (),
    Response = (),
    Error = S::Error,
    InitError = S::InitError,
    Service = impl Service<TcpStream, Response = (), Error = S::Error>,
>
where
    S: ServiceFactory<TcpStream, Config = (), Response = ()>,
    S::Service: 'static,
    S::Future: 'static,
{
    fn_factory(move || {
        let made = http.new_service(());
        let (files, metrics) = (files.clone(), metrics.clone());
        async move {
            let http = Rc::new(made.await?);
            Ok(fn_service(move |io: TcpStream| {
                let (http, files, metrics) = (Rc::clone(&http), files.clone(), metrics.clone());
                async move {
                    let io = match &files {
                        Some(route) => match serve(io, route, &metrics).await {
                            Some(io) => io,
                            None => return Ok(()),
                        },
                        None => io,
                    };
                    http.call(io).await
                }
            }))
        }
    })
}

/// A request head the front may answer.
struct Head {
    len: usize,
    method: Method,
    query: String,
    headers: HeaderMap,
    /// The client asked to close after the answer (`Connection: close`, or HTTP/1.0 without
    /// keep-alive).
    close: bool,
}

/// Serves the file requests at the front of `io`. Gives the connection back when its next
/// request is for actix, or `None` once it is closed.
async fn serve(
    mut io: TcpStream,
    route: &FileRoute,
    metrics: &ServiceMetrics,
) -> Option<TcpStream> {
    let mut buf = vec![0; HEAD_MAX];
    let mut served = false;
    loop {
        let wait = if served {
            KEEP_ALIVE
        } else {
            crate::http::CLIENT_REQUEST_TIMEOUT
        };
        let seen = match tokio::time::timeout(wait, io.peek(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            // A new connection that sent no request in time gets actix's answer to it, at the
            // moment actix would give it, rather than a second wait in actix.
            Err(_) if !served => {
                let timeout = head_of(StatusCode::REQUEST_TIMEOUT, &[], 0, true);
                if stalled(io.write_all(&timeout)).await.is_ok() {
                    linger(io).await;
                }
                return None;
            }
            // An error or the end: actix deals with a new connection as it always does; one
            // that has had its answers is done.
            _ => return (!served).then_some(io),
        };
        let Some(head) = parse(&buf[..seen], route.path) else {
            return Some(io);
        };
        let started = Instant::now();
        let request = FileRequest {
            query: head.query,
            headers: head.headers,
        };
        let headers = request.headers.clone();
        let Some(reply) = (route.handler)(request).await else {
            return Some(io);
        };
        let _in_flight = InFlight::start();
        // The front takes only requests whose path is the route's.
        let span = crate::http::request_span(
            &head.method,
            route.path,
            &headers,
            &uuid::Uuid::new_v4().to_string(),
        );
        let status = reply.status;
        span.record("http.status_code", status.as_u16());
        span.record("otel.status_code", "OK");
        let sent = answer(&mut io, &mut buf, head.len, &head.method, head.close, reply)
            .instrument(span)
            .await;
        crate::metrics::observe(
            head.method.as_str(),
            route.path,
            status.as_u16(),
            started,
            Some(metrics),
        );
        match sent {
            Ok(()) if !head.close => {}
            Ok(()) => {
                linger(io).await;
                return None;
            }
            Err(error) => {
                // The head promised a length that was not sent: the connection cannot carry
                // another answer.
                tracing::debug!(%error, "file answer cut short");
                return None;
            }
        }
        served = true;
    }
}

/// Consumes the request head (`head_len` bytes, already seen) and writes the answer.
async fn answer(
    io: &mut TcpStream,
    buf: &mut [u8],
    head_len: usize,
    method: &Method,
    close: bool,
    reply: FileReply,
) -> io::Result<()> {
    io.read_exact(&mut buf[..head_len]).await?;
    let head = response_head(&reply, close);
    stalled(io.write_all(&head)).await?;
    if *method != Method::HEAD {
        send_file(io, &reply.file, reply.start, reply.start + reply.len).await?;
    }
    Ok(())
}

fn response_head(reply: &FileReply, close: bool) -> Vec<u8> {
    head_of(reply.status, &reply.headers, reply.len, close)
}

/// A response head: the status line, `headers`, then `Content-Length: len`, `Date` and, when
/// `close`, `Connection: close`.
fn head_of(
    status: StatusCode,
    headers: &[(HeaderName, HeaderValue)],
    len: u64,
    close: bool,
) -> Vec<u8> {
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    let date = httpdate::fmt_http_date(SystemTime::now());
    let length = len.to_string();
    let own = [
        (header::CONTENT_LENGTH.as_str(), length.as_bytes()),
        (header::DATE.as_str(), date.as_bytes()),
    ];
    let fields = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .chain(own)
        .chain(close.then_some((header::CONNECTION.as_str(), b"close".as_slice())));
    for (name, value) in fields {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Sends `file[at..end]` to the socket with `sendfile(2)`.
async fn send_file(io: &TcpStream, file: &std::fs::File, mut at: u64, end: u64) -> io::Result<()> {
    while at < end {
        let count = usize::try_from(end - at).map_or(PIECE, |left| left.min(PIECE));
        // sendfile waits for the disk on the worker's thread when a page is not cached; asking
        // the kernel to read the next piece now has it cached by the time it is sent. The
        // advice is only a hint: when it fails, sendfile reads the page itself.
        let next = at.saturating_add(u64::try_from(count).unwrap_or(u64::MAX));
        if next < end {
            let ahead = NonZeroU64::new((end - next).min(PIECE as u64));
            let _ = rustix::fs::fadvise(file, next, ahead, rustix::fs::Advice::WillNeed);
        }
        let sent = stalled(async {
            loop {
                io.writable().await?;
                match io.try_io(Interest::WRITABLE, || {
                    rustix::fs::sendfile(io, file, Some(&mut at), count).map_err(io::Error::from)
                }) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    other => return other,
                }
            }
        })
        .await?;
        if sent == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being sent",
            ));
        }
    }
    Ok(())
}

/// `write` within [`SEND_STALL`].
async fn stalled<T>(write: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    tokio::time::timeout(SEND_STALL, write)
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading",
            ))
        })
}

/// Closes our side, then reads what the client still sends until it closes too (or for
/// [`LINGER`]), so that the kernel does not answer unread data with a reset.
async fn linger(mut io: TcpStream) {
    if io.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = io.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// The head at the start of `bytes` when it is complete, asks for `path` by GET or HEAD and
/// carries no body; `None` for anything actix should see.
fn parse(bytes: &[u8], path: &str) -> Option<Head> {
    let mut fields = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut fields);
    let httparse::Status::Complete(len) = request.parse(bytes).ok()? else {
        return None;
    };
    let method = match request.method? {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        _ => return None,
    };
    let target = request.path?;
    let (target_path, query) = target.split_once('?').unwrap_or((target, ""));
    if target_path != path {
        return None;
    }
    let mut headers = HeaderMap::new();
    for field in request.headers.iter() {
        headers.append(
            HeaderName::from_bytes(field.name.as_bytes()).ok()?,
            HeaderValue::from_bytes(field.value).ok()?,
        );
    }
    // A body, or the promise of one, is for actix, which knows how to read or refuse it.
    let body = [
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::EXPECT,
        header::UPGRADE,
    ];
    if body.iter().any(|name| headers.contains_key(name)) {
        return None;
    }
    let connection = |token: &str| {
        headers.get_all(header::CONNECTION).any(|value| {
            value
                .to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    let close = match request.version? {
        0 => !connection("keep-alive"),
        _ => connection("close"),
    };
    Some(Head {
        len,
        method,
        query: query.to_owned(),
        headers,
        close,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/files";

    #[test]
    fn takes_a_complete_get_or_head_of_its_path_without_a_body() {
        let head = parse(
            b"GET /files?a=1&b=2 HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\nGET /other",
            PATH,
        )
        .expect("taken");
        assert_eq!(head.len, 58);
        assert_eq!(head.method, Method::GET);
        assert_eq!(head.query, "a=1&b=2");
        assert_eq!(head.headers.get(header::RANGE).unwrap(), "bytes=0-9");
        assert!(!head.close);
        let head = parse(b"HEAD /files HTTP/1.1\r\nConnection: Close\r\n\r\n", PATH).unwrap();
        assert_eq!(
            (head.method, head.query.as_str(), head.close),
            (Method::HEAD, "", true)
        );
        assert!(parse(b"GET /files HTTP/1.0\r\n\r\n", PATH).unwrap().close);
        let kept = b"GET /files HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        assert!(!parse(kept, PATH).unwrap().close);
    }

    #[test]
    fn leaves_everything_else_to_actix() {
        for head in [
            // Incomplete: the rest is still on its way.
            b"GET /files?a=1 HTTP/1.1\r\nHost: x\r\n".as_slice(),
            b"POST /files HTTP/1.1\r\n\r\n",
            b"GET /files/ HTTP/1.1\r\n\r\n",
            b"GET /filesx HTTP/1.1\r\n\r\n",
            b"GET /other?x=/files HTTP/1.1\r\n\r\n",
            b"GET http://h/files HTTP/1.1\r\n\r\n",
            b"GET /files HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            b"GET /files HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET /files HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            b"GET /files HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            b"GET /files HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        ] {
            assert!(
                parse(head, PATH).is_none(),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        let many: String = (0..=HEADERS_MAX).map(|i| format!("X-{i}: y\r\n")).collect();
        let many = format!("GET /files HTTP/1.1\r\n{many}\r\n");
        assert!(parse(many.as_bytes(), PATH).is_none());
    }

    struct NoCheck;
    impl crate::http::Readiness for NoCheck {
        fn check(&self) -> Result<(), String> {
            Ok(())
        }
    }

    /// A server whose `route` is a file of `len` bytes for the front, and "actix" for the app;
    /// the front's handler declines `?no`, and answers `Range: bytes=5-14` with those bytes.
    /// (Each test has its own route, as the request counts are the process's.)
    fn start(len: usize, route: &'static str) -> (u16, std::path::PathBuf, Vec<u8>) {
        let path = std::env::temp_dir().join(format!("front-{}", uuid::Uuid::new_v4()));
        let bytes = testkit::build_bytes(len, 1);
        std::fs::write(&path, &bytes).expect("write the file");
        let file = path.clone();
        let files = FileRoute::new(route, move |request: FileRequest| {
            let file = file.clone();
            async move {
                if request.query == "no" {
                    return None;
                }
                let whole = request.headers.get(header::RANGE).is_none();
                let size = std::fs::metadata(&file).ok()?.len();
                Some(FileReply {
                    status: if whole {
                        StatusCode::OK
                    } else {
                        StatusCode::PARTIAL_CONTENT
                    },
                    headers: vec![(header::ETAG, HeaderValue::from_static("\"f\""))],
                    file: std::fs::File::open(&file).ok()?,
                    start: if whole { 0 } else { 5 },
                    len: if whole { size } else { 10 },
                })
            }
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let server = crate::http::server_with_files(
            listener,
            Arc::new(NoCheck),
            ServiceMetrics::new(),
            crate::http::Limits::default(),
            Some(files),
            move |cfg| {
                cfg.route(
                    route,
                    web::get().to(|| async { actix_web::HttpResponse::Ok().body("actix") }),
                );
            },
        )
        .expect("server");
        actix_web::rt::spawn(server);
        (port, path, bytes)
    }

    async fn connect(port: u16) -> TcpStream {
        TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect")
    }

    async fn exchange(io: &mut TcpStream, request: &str) -> (String, Vec<u8>) {
        let answer = testkit::http::raw_exchange(io, request).await;
        (answer.head, answer.body)
    }

    fn requests_counted(metrics: &str, status: u16) -> u64 {
        let series =
            format!("http_requests_total{{method=\"GET\",route=\"/f\",status=\"{status}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .map_or(0, |n| n.trim().parse().expect("a count"))
    }

    async fn metrics(port: u16) -> String {
        let (_, body) = exchange(
            &mut connect(port).await,
            "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await;
        String::from_utf8(body).expect("text")
    }

    #[actix_web::test]
    async fn files_go_out_by_sendfile_and_the_rest_of_the_connection_to_actix() {
        let (port, path, bytes) = start(3 * PIECE + 123, "/f");
        let before = metrics(port).await;
        let mut io = connect(port).await;
        let get = "GET /f?x=1 HTTP/1.1\r\nHost: x\r\n\r\n";
        let (head, body) = exchange(&mut io, get).await;
        assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
        assert!(
            head.contains("etag: \"f\"\r\n") && head.contains("date: "),
            "{head}"
        );
        assert!(!head.contains("connection: close"), "{head}");
        assert!(body == bytes, "the file arrives whole and in order");
        // The connection stays open, and stays the front's while it asks for files.
        let ranged = "GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=5-14\r\n\r\n";
        let (head, body) = exchange(&mut io, ranged).await;
        assert!(
            head.starts_with("http/1.1 206 partial content\r\n"),
            "{head}"
        );
        assert_eq!(body, &bytes[5..15]);
        // A request the route declines goes to actix, and so does everything after it.
        let (head, body) = exchange(&mut io, "GET /f?no HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
        assert_eq!(body, b"actix");
        assert_eq!(exchange(&mut io, get).await.1, b"actix");

        let mut io = connect(port).await;
        let (head, body) = exchange(&mut io, "HEAD /f HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}\r\n", bytes.len())),
            "{head}"
        );
        assert!(body.is_empty());
        let (head, _) = exchange(&mut io, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(
            head.starts_with("http/1.1 404"),
            "actix answers the next request: {head}"
        );

        // A body, or its promise, is for actix.
        let with_body = "GET /f HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            exchange(&mut connect(port).await, with_body).await.1,
            b"actix"
        );

        // Asked to close, the front says so and closes after the file.
        let mut io = connect(port).await;
        let close = "GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let (head, body) = exchange(&mut io, close).await;
        assert!(head.contains("connection: close\r\n"), "{head}");
        assert!(body == bytes);
        assert_eq!(io.read(&mut [0; 16]).await.expect("the end"), 0);

        // The front's answers are counted like actix's: two 200s and a 206 of the front's, and
        // three 200s of actix's.
        let after = metrics(port).await;
        assert_eq!(
            requests_counted(&after, 200) - requests_counted(&before, 200),
            5
        );
        assert_eq!(
            requests_counted(&after, 206) - requests_counted(&before, 206),
            1
        );
        let _ = std::fs::remove_file(path);
    }

    /// A connection that sends nothing is answered 408 and closed after the request timeout,
    /// as actix does, and not held for a second timeout in actix.
    #[actix_web::test]
    async fn a_silent_connection_gets_a_408_after_the_request_timeout() {
        let (port, path, _) = start(10, "/h");
        let mut io = connect(port).await;
        let started = Instant::now();
        let mut answer = Vec::new();
        io.read_to_end(&mut answer).await.expect("read to the end");
        let waited = started.elapsed();
        let answer = String::from_utf8(answer)
            .expect("text")
            .to_ascii_lowercase();
        assert!(
            answer.starts_with("http/1.1 408 request timeout\r\n"),
            "{answer}"
        );
        assert!(answer.contains("connection: close\r\n"), "{answer}");
        let timeout = crate::http::CLIENT_REQUEST_TIMEOUT;
        assert!(
            waited >= timeout && waited < timeout * 3 / 2,
            "answered after {waited:?}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[actix_web::test]
    async fn a_file_that_shrinks_while_being_sent_ends_the_connection_short() {
        let len = 64 * PIECE;
        let (port, path, _) = start(len, "/g");
        let mut io = connect(port).await;
        io.write_all(b"GET /g HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        // Once the socket's buffers are full the front waits for the client; the file
        // shrinks meanwhile.
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(PIECE as u64))
            .expect("truncate");
        let mut got = Vec::new();
        io.read_to_end(&mut got).await.expect("read to the end");
        assert!(
            got.len() < len,
            "the connection ends before the promised {len} bytes: {}",
            got.len()
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn the_head_carries_the_length_the_date_and_a_close() {
        let file = std::fs::File::open("Cargo.toml").expect("a file");
        let reply = FileReply {
            status: StatusCode::PARTIAL_CONTENT,
            headers: vec![(header::ETAG, HeaderValue::from_static("\"e\""))],
            file,
            start: 2,
            len: 10,
        };
        let head = String::from_utf8(response_head(&reply, true)).expect("text");
        assert!(head.starts_with(
            "HTTP/1.1 206 Partial Content\r\netag: \"e\"\r\ncontent-length: 10\r\ndate: "
        ));
        assert!(
            head.ends_with(" GMT\r\nconnection: close\r\n\r\n"),
            "{head}"
        );
        let head = String::from_utf8(response_head(&reply, false)).expect("text");
        assert!(!head.contains("connection"));
    }
}
