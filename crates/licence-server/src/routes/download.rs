//! `GET /api/download?file=&expires=&sig=`: a signed address of a manifest file, streamed with
//! `Range` (one range, or several answered as `multipart/byteranges`, which electron-updater's
//! differential download asks for), a strong `ETag` (the file's SHA-256, identical on every
//! replica) and `If-Range`. `GET /api/download.blockmap` serves the file's blockmap.
//!
//! A single-part file answer is sent by `sendfile(2)` before actix parses the request
//! ([`file_route`]) when the request is the first of its connection or follows other downloads;
//! otherwise, and for every refusal, [`download`] answers through actix. Both take their answer
//! from `plan`.

use actix_web::body::SizedStream;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::{StreamExt, stream};
use serde::Deserialize;
use service_kit::files::{FileReply, FileRequest, FileRoute};

use super::AppState;
use crate::error::ApiError;
use crate::signing;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Query {
    file: Option<String>,
    expires: Option<String>,
    sig: Option<String>,
}

/// Big enough that the per-chunk hop to the blocking pool is lost in the copying, small
/// enough that a download holds little memory.
const CHUNK: usize = 512 * 1024;

#[tracing::instrument(level = "debug", skip_all)]
pub async fn download(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<Query>,
) -> Result<HttpResponse, ApiError> {
    let plan = plan(&state, query.into_inner(), req.headers()).await?;
    let f = std::sync::Arc::new(plan.open()?);
    let mut resp = HttpResponse::build(plan.status);
    for header in plan.headers {
        resp.insert_header(header);
    }
    let spare = Spare::default();
    if let Some(parts) = plan.parts {
        return Ok(resp.body(parts.body(f, spare)));
    }
    let (start, end) = (plan.start, plan.start + plan.len);
    let chunk = u64::try_from(CHUNK).unwrap_or(u64::MAX);
    let offsets = std::iter::successors(Some(start), move |at| Some(at + chunk))
        .take_while(move |at| *at < end);
    // Each chunk is one positioned read straight into the buffer that goes out, on the blocking
    // pool: no seek, no intermediate buffer of an async file (which would copy every byte once
    // more). Two reads are in flight at most: `web::block` starts a read when it is called, not
    // when it is polled, and `buffered` calls it for the next chunk as it hands out the current
    // one, so that the next read runs while actix writes the current chunk to the socket.
    let body = stream::iter(offsets)
        .map(move |at| {
            let want = usize::try_from(end - at).map_or(CHUNK, |l| l.min(CHUNK));
            let (file, spare) = (std::sync::Arc::clone(&f), spare.clone());
            let read = web::block(move || read_chunk(&file, at, want, &spare));
            async move {
                read.await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
            }
        })
        .buffered(2);
    // Sized, so that Content-Length is sent and HEAD answers carry it without a body.
    Ok(resp.body(SizedStream::new(plan.len, body)))
}

/// The same answers as [`download`], sent with `sendfile(2)` before actix parses the request
/// (see `service_kit::files`); every refusal is left to [`download`].
pub fn file_route(state: AppState) -> FileRoute {
    FileRoute::new("/api/download", move |request: FileRequest| {
        let state = state.clone();
        async move {
            let query = web::Query::<Query>::from_query(&request.query)
                .ok()?
                .into_inner();
            let plan = plan(&state, query, &request.headers).await.ok()?;
            // sendfile(2) sends one stretch of the file; several ranges go through actix.
            if plan.parts.is_some() {
                return None;
            }
            let file = plan.open().ok()?;
            Some(FileReply {
                status: plan.status,
                headers: plan.headers,
                file,
                start: plan.start,
                len: plan.len,
            })
        }
    })
}

/// What a valid download asks for: the answer's status and headers, and which bytes of which
/// file follow them.
struct Plan {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    path: std::path::PathBuf,
    start: u64,
    len: u64,
    /// Several ranges: the parts of a `multipart/byteranges` body of `len` bytes.
    parts: Option<Parts>,
}

/// Most ranges one request may ask for: electron-updater asks for up to 1,000 at a time; a
/// request for more is answered with the whole file, as RFC 9110 allows.
const MAX_RANGES: usize = 1000;

/// The body of a `multipart/byteranges` answer: each range behind its part header, then the
/// closing delimiter.
struct Parts {
    boundary: String,
    ranges: Vec<(u64, u64)>,
    size: u64,
}

/// A piece of a multipart body: part headers, or bytes of the file.
enum Piece {
    Text(web::Bytes),
    File { at: u64, want: usize },
}

impl Parts {
    fn head(&self, i: usize, (start, end): (u64, u64)) -> String {
        // The first part starts without the CRLF that ends the previous one.
        let lead = if i == 0 { "" } else { "\r\n" };
        format!(
            "{lead}--{}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes {start}-{end}/{}\r\n\r\n",
            self.boundary, self.size
        )
    }

    fn tail(&self) -> String {
        format!("\r\n--{}--\r\n", self.boundary)
    }

    fn len(&self) -> u64 {
        let heads: usize = self
            .ranges
            .iter()
            .enumerate()
            .map(|(i, r)| self.head(i, *r).len())
            .sum();
        let bytes: u64 = self.ranges.iter().map(|(s, e)| e - s + 1).sum();
        u64::try_from(heads + self.tail().len()).unwrap_or(u64::MAX) + bytes
    }

    fn body(
        self,
        file: std::sync::Arc<std::fs::File>,
        spare: Spare,
    ) -> SizedStream<impl futures_util::Stream<Item = std::io::Result<web::Bytes>>> {
        let len = self.len();
        let chunk = u64::try_from(CHUNK).unwrap_or(u64::MAX);
        let mut pieces = Vec::new();
        for (i, &(start, end)) in self.ranges.iter().enumerate() {
            pieces.push(Piece::Text(self.head(i, (start, end)).into()));
            let mut at = start;
            while at <= end {
                let want = usize::try_from(end + 1 - at).map_or(CHUNK, |l| l.min(CHUNK));
                pieces.push(Piece::File { at, want });
                at += chunk;
            }
        }
        pieces.push(Piece::Text(self.tail().into()));
        let body = stream::iter(pieces)
            .map(move |piece| {
                let (file, spare) = (std::sync::Arc::clone(&file), spare.clone());
                async move {
                    match piece {
                        Piece::Text(bytes) => Ok(bytes),
                        Piece::File { at, want } => {
                            web::block(move || read_chunk(&file, at, want, &spare))
                                .await
                                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
                        }
                    }
                }
            })
            .buffered(2);
        SizedStream::new(len, body)
    }
}

impl Plan {
    fn open(&self) -> Result<std::fs::File, ApiError> {
        std::fs::File::open(&self.path).map_err(|_| ApiError::FileNotFound)
    }
}

/// The file a download address names, once its signature and expiry hold: the one check of
/// every address the feeds and `/api/latest` hand out (the file itself and its blockmap).
fn signed_file(state: &AppState, query: Query) -> Result<String, ApiError> {
    let Query { file, expires, sig } = query;
    let (Some(file), Some(expires), Some(sig)) = (file, expires, sig) else {
        return Err(ApiError::InvalidDownloadSignature);
    };
    let expires: i64 = expires
        .parse()
        .map_err(|_| ApiError::InvalidDownloadSignature)?;
    let secret = state.settings.download_signing_secret.expose().as_bytes();
    if !signing::verify_download(secret, &file, expires, &sig, state.clock.now()) {
        return Err(ApiError::InvalidDownloadSignature);
    }
    Ok(file)
}

/// Checks the signed address and the range headers of a download.
async fn plan(state: &AppState, query: Query, headers: &HeaderMap) -> Result<Plan, ApiError> {
    let file = signed_file(state, query)?;
    let builds = state.builds.clone();
    let info = web::block(move || builds.listed_file(&file))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::ReleasesUnavailable)?
        .ok_or(ApiError::FileNotFound)?;

    let etag = format!("\"{}\"", info.sha256);
    let size = info.size;
    let ranges = match headers.get(header::RANGE) {
        Some(value) if if_range_allows(headers, &etag) => parse_ranges(value, size)?,
        _ => None,
    };
    let mut parts = None;
    let (status, start, len) = match ranges.as_deref() {
        Some([(start, end)]) => (StatusCode::PARTIAL_CONTENT, *start, end - start + 1),
        Some(several @ [_, _, ..]) => {
            let p = Parts {
                boundary: boundary(),
                ranges: several.to_vec(),
                size,
            };
            let len = p.len();
            parts = Some(p);
            (StatusCode::PARTIAL_CONTENT, 0, len)
        }
        Some([]) | None => (StatusCode::OK, 0, size),
    };
    let text = |value: String| HeaderValue::try_from(value).map_err(ApiError::internal);
    let content_type = match &parts {
        Some(p) => text(format!("multipart/byteranges; boundary={}", p.boundary))?,
        None => HeaderValue::from_static("application/octet-stream"),
    };
    let mut out = vec![
        (header::CONTENT_TYPE, content_type),
        (header::ACCEPT_RANGES, HeaderValue::from_static("bytes")),
        (header::ETAG, text(etag)?),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-transform"),
        ),
        (
            header::CONTENT_DISPOSITION,
            text(content_disposition(
                info.path.file_name().and_then(|n| n.to_str()),
            ))?,
        ),
    ];
    if status == StatusCode::PARTIAL_CONTENT && parts.is_none() {
        out.push((
            header::CONTENT_RANGE,
            text(format!("bytes {start}-{}/{size}", start + len - 1))?,
        ));
    }
    Ok(Plan {
        status,
        headers: out,
        path: info.path,
        start,
        len,
        parts,
    })
}

/// A boundary that no file's bytes contain in practice: random on every answer.
fn boundary() -> String {
    let random: [u8; 16] = rand::random();
    format!("licence-server-{}", signing::to_hex(&random))
}

/// `GET /api/download.blockmap?file=&expires=&sig=`: the blockmap of a listed file, at the
/// address electron-updater derives from the file's signed address (`.blockmap` added to the
/// path, the query kept).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn blockmap(
    state: web::Data<AppState>,
    query: web::Query<Query>,
) -> Result<HttpResponse, ApiError> {
    let file = signed_file(&state, query.into_inner())?;
    let builds = state.builds.clone();
    let bytes = web::block(move || match builds.listed_blockmap(&file)? {
        // Blockmaps are a few hundred kilobytes of gzipped JSON: read whole.
        Some(path) => Ok(std::fs::read(path).ok()),
        None => anyhow::Ok(None),
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::ReleasesUnavailable)?
    .ok_or(ApiError::FileNotFound)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/octet-stream"))
        .insert_header((header::CACHE_CONTROL, "private, no-transform"))
        .body(bytes))
}

/// The read buffers of one download that actix has finished with. A chunk's buffer comes back
/// here when the last reference to it is dropped, so that a download allocates and zeroes its
/// two or three buffers once, not one per chunk.
#[derive(Clone, Default)]
struct Spare(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// A buffer of `want` bytes: a spare one cut to that length, or a new one (only a
    /// download's last chunk, or a short range, is shorter than [`CHUNK`]).
    fn take(&self, want: usize) -> Vec<u8> {
        let reused = self.0.lock().ok().and_then(|mut bufs| bufs.pop());
        let mut buf = reused
            .filter(|buf| buf.len() >= want)
            .unwrap_or_else(|| vec![0; want]);
        buf.truncate(want);
        buf
    }
}

/// A chunk's bytes, in a buffer that goes back to its download's [`Spare`].
struct Lent {
    buf: Vec<u8>,
    home: Spare,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Ok(mut bufs) = self.home.0.lock() {
            bufs.push(std::mem::take(&mut self.buf));
        }
    }
}

/// `want` bytes of `file` from `at` (at most [`CHUNK`]); an error if the file ends sooner (it
/// shrank while being sent: the length was promised in `Content-Length`).
fn read_chunk(
    file: &std::fs::File,
    at: u64,
    want: usize,
    spare: &Spare,
) -> std::io::Result<web::Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buf = spare.take(want);
    if let Err(e) = file.read_exact_at(&mut buf, at) {
        return Err(if e.kind() == std::io::ErrorKind::UnexpectedEof {
            std::io::Error::new(e.kind(), "file shrank while being sent")
        } else {
            e
        });
    }
    Ok(web::Bytes::from_owner(Lent {
        buf,
        home: spare.clone(),
    }))
}

/// `If-Range` with the current ETag (or absent) lets the range apply; anything else (an old
/// ETag, a date, which a strong validator never matches) asks for the whole, changed file.
fn if_range_allows(headers: &HeaderMap, etag: &str) -> bool {
    match headers.get(header::IF_RANGE) {
        None => true,
        Some(v) => v.to_str().ok().map(str::trim) == Some(etag),
    }
}

/// The byte ranges of a file of `size` bytes as inclusive `(start, end)`, in the order asked
/// (electron-updater reads the parts in that order). `Ok(None)` means "send the whole file"
/// (other units, unparsable headers and too many ranges are ignored as RFC 9110 permits);
/// ranges entirely outside the file are dropped, and 416 when none is left.
fn parse_ranges(value: &HeaderValue, size: u64) -> Result<Option<Vec<(u64, u64)>>, ApiError> {
    let Ok(value) = value.to_str() else {
        return Ok(None);
    };
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    let specs: Vec<&str> = spec.split(',').map(str::trim).collect();
    if specs.len() > MAX_RANGES {
        return Ok(None);
    }
    let mut ranges = Vec::with_capacity(specs.len());
    let mut unsatisfiable = false;
    for one in specs {
        match parse_range(one, size) {
            Ok(Some(r)) => ranges.push(r),
            Ok(None) => return Ok(None),
            Err(_) => unsatisfiable = true,
        }
    }
    if ranges.is_empty() && unsatisfiable {
        return Err(ApiError::RangeNotSatisfiable { size });
    }
    Ok(Some(ranges))
}

/// One range spec (`0-9`, `90-`, `-10`) of a file of `size` bytes: `Ok(None)` when malformed,
/// 416 when it lies outside the file.
fn parse_range(spec: &str, size: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    let (first, last) = (first.trim(), last.trim());
    let unsatisfiable = ApiError::RangeNotSatisfiable { size };
    if first.is_empty() {
        // A suffix: the last N bytes.
        let Ok(n) = last.parse::<u64>() else {
            return Ok(None);
        };
        if n == 0 || size == 0 {
            return Err(unsatisfiable);
        }
        return Ok(Some((size.saturating_sub(n), size - 1)));
    }
    let Ok(start) = first.parse::<u64>() else {
        return Ok(None);
    };
    let end = if last.is_empty() {
        size.saturating_sub(1)
    } else {
        match last.parse::<u64>() {
            Ok(end) if end >= start => end.min(size.saturating_sub(1)),
            _ => return Ok(None),
        }
    };
    if start >= size {
        return Err(unsatisfiable);
    }
    Ok(Some((start, end)))
}

fn content_disposition(name: Option<&str>) -> String {
    let safe: String = name
        .unwrap_or("download")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._- ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{safe}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str, size: u64) -> Result<Option<(u64, u64)>, ApiError> {
        match parse_ranges(&HeaderValue::from_str(s).expect("header"), size)? {
            Some(r) if r.len() == 1 => Ok(r.first().copied()),
            _ => Ok(None),
        }
    }

    #[test]
    fn several_ranges() {
        let ranges = |s: &str| parse_ranges(&HeaderValue::from_str(s).expect("header"), 100);
        assert_eq!(
            ranges("bytes=0-1, 5-6,-3").ok().flatten(),
            Some(vec![(0, 1), (5, 6), (97, 99)])
        );
        assert_eq!(
            ranges("bytes=0-1,200-300").ok().flatten(),
            Some(vec![(0, 1)])
        );
        assert!(ranges("bytes=200-300,300-").is_err());
        assert_eq!(ranges("bytes=0-1,x").ok().flatten(), None);
    }

    #[test]
    fn ranges() {
        assert!(matches!(range("bytes=0-9", 100), Ok(Some((0, 9)))));
        assert!(matches!(range("bytes=90-", 100), Ok(Some((90, 99)))));
        assert!(matches!(range("bytes=-10", 100), Ok(Some((90, 99)))));
        assert!(matches!(range("bytes=-500", 100), Ok(Some((0, 99)))));
        assert!(matches!(range("bytes=50-500", 100), Ok(Some((50, 99)))));
        assert!(matches!(range("items=0-1", 100), Ok(None)));
        assert!(matches!(range("bytes=9-1", 100), Ok(None)));
        assert!(matches!(range("bytes=x-1", 100), Ok(None)));
        assert!(matches!(
            range("bytes=100-", 100),
            Err(ApiError::RangeNotSatisfiable { size: 100 })
        ));
        assert!(range("bytes=-0", 100).is_err());
    }
}
