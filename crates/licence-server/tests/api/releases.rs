//! `latest.json`, signed download addresses and the download itself.

use licence_server::clock::Clock;
use serde_json::{Value, json};
use testkit::http::raw_exchange;

use crate::helpers::{
    DOWNLOAD_KEY, MAC_BUILD, TestApp, UNLISTED, WIN_BUILD, assert_error, local_path, sha256_hex,
    spawn_app,
};

async fn fetch(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = app.client.get(format!("{}{path}", app.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("GET")
}

async fn licensed_latest(app: &TestApp) -> Value {
    let key = app.licence("pro", "active");
    let token = app.token(&key, "pc").await;
    let (s, b) = app.get("/api/latest", Some(&token)).await;
    assert_eq!(s, 200, "{b}");
    b
}

/// The Mac build as it is on disk, and the signed path of its download in a licensed manifest.
async fn mac_download(app: &TestApp) -> (Vec<u8>, String) {
    let mac = std::fs::read(app.builds.path().join(MAC_BUILD)).expect("build");
    let b = licensed_latest(app).await;
    assert_eq!(b["files"][0]["name"], MAC_BUILD);
    (mac, local_path(b["files"][0]["url"].as_str().expect("url")))
}

fn signed(app: &TestApp, file: &str) -> String {
    let expires = (app.clock.now() + chrono::Duration::minutes(15)).timestamp();
    let sig = licence_server::signing::sign_download(DOWNLOAD_KEY.as_bytes(), file, expires);
    let mut u = url::Url::parse("http://x/api/download").expect("url");
    u.query_pairs_mut()
        .append_pair("file", file)
        .append_pair("expires", &expires.to_string())
        .append_pair("sig", &sig);
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_signs_addresses_only_for_licensed_clients() {
    let app = spawn_app().await;
    let mac = std::fs::read(app.builds.path().join(MAC_BUILD)).expect("build");
    let (s, b) = app.get("/api/latest", None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["version"], "1.8.0");
    assert_eq!(b["pubDate"], "2026-11-20T10:00:00Z");
    assert_eq!(b["notes"], "Faster exports.");
    assert_eq!(b["licensed"], false);
    assert_eq!(b["files"][0]["platform"], "macos-universal");
    assert_eq!(b["files"][0]["name"], MAC_BUILD);
    assert_eq!(b["files"][0]["size"], mac.len());
    assert_eq!(b["files"][0]["sha256"], sha256_hex(&mac));
    assert_eq!(b["files"][0]["url"], Value::Null);
    assert_eq!(b["files"][1]["name"], WIN_BUILD);

    // An inactive licence's token is not licensed either.
    let key = app.licence("pro", "active");
    let token = app.token(&key, "pc").await;
    use diesel::prelude::*;
    use licence_server::schema::licence;
    diesel::update(licence::table.filter(licence::license_key.eq(&key)))
        .set(licence::status.eq("unpaid"))
        .execute(&mut app.conn())
        .expect("update");
    let (_, b) = app.get("/api/latest", Some(&token)).await;
    assert_eq!(b["licensed"], false);

    let b = licensed_latest(&app).await;
    assert_eq!(b["licensed"], true);
    for f in b["files"].as_array().expect("files") {
        let url = f["url"].as_str().expect("signed address");
        assert!(
            url.starts_with("http://127.0.0.1:8083/api/download?"),
            "{url}"
        );
        let resp = fetch(&app, &local_path(url), &[]).await;
        assert_eq!(resp.status().as_u16(), 200);
        let len = resp.content_length();
        let bytes = resp.bytes().await.expect("body");
        assert_eq!(len, Some(bytes.len() as u64));
        assert_eq!(f["size"], bytes.len());
        assert_eq!(
            f["sha256"],
            sha256_hex(&bytes),
            "the whole file matches the manifest"
        );
    }
}

/// A download reads the file in chunks into buffers it reuses once actix has sent them: every
/// byte must still arrive in place, across chunk boundaries, with several downloads at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_of_several_chunks_arrive_whole_and_in_order() {
    let app = spawn_app().await;
    let (mac, path) = mac_download(&app).await;
    assert!(mac.len() > 2 * 512 * 1024, "the build spans several chunks");
    let ranges = [
        None,
        Some((524_000, 1_049_000)),
        Some((1, mac.len() - 2)),
        None,
    ];
    let downloads = ranges.iter().map(|range| {
        let (app, path) = (&app, &path);
        async move {
            let header = range.map(|(from, to)| format!("bytes={from}-{to}"));
            let headers: Vec<(&str, &str)> = header.iter().map(|h| ("range", h.as_str())).collect();
            let resp = fetch(app, path, &headers).await;
            (resp.status().as_u16(), resp.bytes().await.expect("body"))
        }
    });
    let answers = futures_util::future::join_all(downloads).await;
    for (range, (status, body)) in ranges.iter().zip(answers) {
        let want = match range {
            None => (200, &mac[..]),
            Some((from, to)) => (206, &mac[*from..=*to]),
        };
        assert_eq!(status, want.0, "{range:?}");
        assert_eq!(body.len(), want.1.len(), "{range:?}");
        assert!(body.as_ref() == want.1, "the bytes of {range:?} differ");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_etag_and_if_range() {
    let app = spawn_app().await;
    let (mac, path) = mac_download(&app).await;

    let resp = fetch(&app, &path, &[("range", "bytes=1000-1999")]).await;
    assert_eq!(resp.status().as_u16(), 206);
    let etag = resp.headers()["etag"].to_str().expect("etag").to_owned();
    assert_eq!(etag, format!("\"{}\"", sha256_hex(&mac)));
    assert_eq!(
        resp.headers()["content-range"],
        format!("bytes 1000-1999/{}", mac.len()).as_str()
    );
    assert_eq!(resp.headers()["accept-ranges"], "bytes");
    assert_eq!(resp.bytes().await.expect("body").as_ref(), &mac[1000..2000]);

    let resp = fetch(&app, &path, &[("range", "bytes=-100")]).await;
    assert_eq!(resp.status().as_u16(), 206);
    assert_eq!(
        resp.bytes().await.expect("body").as_ref(),
        &mac[mac.len() - 100..]
    );

    let resp = fetch(
        &app,
        &path,
        &[("range", "bytes=299000-"), ("if-range", &etag)],
    )
    .await;
    assert_eq!(
        resp.status().as_u16(),
        206,
        "If-Range with the current ETag resumes"
    );
    assert_eq!(resp.bytes().await.expect("body").as_ref(), &mac[299_000..]);

    let resp = fetch(
        &app,
        &path,
        &[("range", "bytes=0-9"), ("if-range", "\"old\"")],
    )
    .await;
    assert_eq!(resp.status().as_u16(), 200, "a changed file is sent whole");
    assert_eq!(resp.bytes().await.expect("body").len(), mac.len());

    let resp = fetch(&app, &path, &[("range", &format!("bytes={}-", mac.len()))]).await;
    assert_eq!(resp.status().as_u16(), 416);
    assert_eq!(
        resp.headers()["content-range"],
        format!("bytes */{}", mac.len()).as_str()
    );
    let (s, b) = crate::helpers::answer(resp).await;
    assert_error(s, &b, 416, "RANGE_NOT_SATISFIABLE");

    let resp = app
        .client
        .head(format!("{}{path}", app.base))
        .send()
        .await
        .expect("HEAD");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-length"],
        mac.len().to_string().as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_or_expired_addresses_are_403() {
    let app = spawn_app().await;
    let (_, path) = mac_download(&app).await;
    let u = url::Url::parse(&format!("http://x{path}")).expect("url");
    let q: std::collections::HashMap<String, String> = u.query_pairs().into_owned().collect();
    let make = |file: &str, expires: &str, sig: &str| {
        let mut u = url::Url::parse("http://x/api/download").expect("url");
        u.query_pairs_mut()
            .append_pair("file", file)
            .append_pair("expires", expires)
            .append_pair("sig", sig);
        format!("{}?{}", u.path(), u.query().unwrap_or(""))
    };
    let later = (q["expires"].parse::<i64>().expect("expires") + 3600).to_string();
    let mut flipped = q["sig"].clone();
    let last = if flipped.ends_with('0') { "1" } else { "0" };
    flipped.replace_range(flipped.len() - 1.., last);
    for bad in [
        make(WIN_BUILD, &q["expires"], &q["sig"]),
        make(MAC_BUILD, &later, &q["sig"]),
        make(MAC_BUILD, &q["expires"], &flipped),
        make(MAC_BUILD, &q["expires"], ""),
        make(MAC_BUILD, "soon", &q["sig"]),
        "/api/download".to_owned(),
        format!("/api/download?file={MAC_BUILD}"),
    ] {
        let (s, b) = crate::helpers::answer(fetch(&app, &bad, &[]).await).await;
        assert_error(s, &b, 403, "INVALID_SIGNATURE");
    }
    assert_eq!(fetch(&app, &path, &[]).await.status().as_u16(), 200);
    // Fifteen minutes later the address has expired.
    app.clock.advance(chrono::Duration::minutes(15));
    let (s, b) = crate::helpers::answer(fetch(&app, &path, &[]).await).await;
    assert_error(s, &b, 403, "INVALID_SIGNATURE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_outside_the_manifest_or_the_directory_is_served() {
    let app = spawn_app().await;
    let outside = app.outside_path().to_path_buf();
    let outside_name = outside
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name")
        .to_owned();
    let secret_bytes = std::fs::read(&outside).expect("outside file");
    // Even correctly signed, these names are never served: the signature is not the only guard.
    let names = [
        format!("../{outside_name}"),
        outside.to_string_lossy().into_owned(),
        format!("%2e%2e%2f{outside_name}"),
        format!("..%2F{outside_name}"),
        format!("..\\{outside_name}"),
        "/etc/passwd".to_owned(),
        "../../../../etc/passwd".to_owned(),
        UNLISTED.to_owned(),
        "latest.json/..".to_owned(),
        ".".to_owned(),
        String::new(),
    ];
    for name in &names {
        let resp = fetch(&app, &signed(&app, name), &[]).await;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.expect("body");
        assert_eq!(status, 404, "{name}");
        assert!(
            !body.windows(secret_bytes.len()).any(|w| w == secret_bytes),
            "{name}"
        );
    }
    // Raw traversal in the query string itself, without a valid signature.
    for raw in [
        format!("/api/download?file=../{outside_name}&expires=9999999999&sig=00"),
        format!("/api/download?file=%2e%2e%2f{outside_name}&expires=9999999999&sig=00"),
    ] {
        let (s, b) = crate::helpers::answer(fetch(&app, &raw, &[]).await).await;
        assert_error(s, &b, 403, "INVALID_SIGNATURE");
    }
    // A listed name is served, so the refusals above are not a broken route.
    let ok = fetch(&app, &signed(&app, MAC_BUILD), &[]).await;
    assert_eq!(ok.status().as_u16(), 200);
    let _ = json!(null);
}

/// A download asked first on a new connection is sent by sendfile before actix parses it; the
/// same request after another one on a connection goes through actix. Both give the same
/// answer, to the byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_is_the_same_whichever_path_serves_it() {
    let app = spawn_app().await;
    let (mac, path) = mac_download(&app).await;
    let etag = format!("\"{}\"", sha256_hex(&mac));
    let addr = app.base.trim_start_matches("http://").to_owned();
    let cases = [
        ("GET", String::new()),
        ("HEAD", String::new()),
        ("GET", "Range: bytes=1000-1999\r\n".to_owned()),
        ("GET", "Range: bytes=-100\r\n".to_owned()),
        (
            "GET",
            format!("Range: bytes=299000-\r\nIf-Range: {etag}\r\n"),
        ),
        (
            "GET",
            "Range: bytes=0-9\r\nIf-Range: \"old\"\r\n".to_owned(),
        ),
        ("GET", format!("Range: bytes={}-\r\n", mac.len())),
        ("HEAD", "Range: bytes=5-14\r\n".to_owned()),
    ];
    for (method, extra) in cases {
        let request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n");
        let mut fresh = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        let first = raw_exchange(&mut fresh, &request).await;
        let mut used = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        let health = format!("GET /api/health HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        assert!(
            raw_exchange(&mut used, &health)
                .await
                .head
                .contains(" 200 ")
        );
        let after = raw_exchange(&mut used, &request).await;
        assert_eq!(first.status_line(), after.status_line(), "{method} {extra}");
        assert_eq!(
            first.fields_but_date(),
            after.fields_but_date(),
            "{method} {extra}"
        );
        assert!(
            first.body == after.body,
            "the bodies of {method} {extra} differ"
        );
    }
    // And it is the file.
    let mut fresh = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let whole = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    assert!(raw_exchange(&mut fresh, &whole).await.body == mac);
}
