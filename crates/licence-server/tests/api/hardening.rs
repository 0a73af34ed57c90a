//! Hostile and unlucky traffic: wrong methods, refunds that overtake their order, a cold release
//! cache under a burst, and clients hammering the licence routes.

use serde_json::json;

use crate::helpers::{VARIANT_PRO, answer, assert_error, build_bytes, order_created, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_is_405_not_404() {
    let app = spawn_app().await;
    let cases = [
        ("GET", "/api/license/activate"),
        ("GET", "/api/license/validate"),
        ("PUT", "/api/license/deactivate"),
        ("POST", "/api/latest"),
        ("DELETE", "/api/download"),
        ("GET", "/api/webhook/lemonsqueezy"),
        ("GET", "/api/usage/consume"),
        ("POST", "/api/usage/status"),
        ("POST", "/api/health"),
    ];
    for (method, path) in cases {
        let resp = app
            .client
            .request(
                method.parse().expect("method"),
                format!("{}{path}", app.base),
            )
            .body("{}")
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap_or(json!(null));
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_before_its_order_leaves_no_active_licence() {
    let app = spawn_app().await;
    let mut refund = order_created(8101, VARIANT_PRO, "early@example.com");
    refund["meta"]["event_name"] = json!("order_refunded");
    refund["data"]["attributes"]["status"] = json!("refunded");
    refund["data"]["attributes"]["refunded"] = json!(true);
    refund["data"]["attributes"]["updated_at"] = json!("2026-11-22T07:00:00Z");
    app.deliver(&refund).await;
    app.deliver(&order_created(8101, VARIANT_PRO, "early@example.com"))
        .await;
    if let Some(key) = app.key_of_order("8101") {
        let (s, b) = app.activate(&key, "pc").await;
        assert_error(s, &b, 403, "LICENSE_INACTIVE");
    }
    assert_eq!(
        app.count("email_outbox"),
        0,
        "no licence e-mail for a refunded order"
    );
    // Another order is unaffected.
    app.deliver(&order_created(8102, VARIANT_PRO, "b@example.com"))
        .await;
    assert!(app.key_of_order("8102").is_some());
}

#[test]
fn a_cold_release_cache_hashes_each_file_once_under_concurrency() {
    let dir = testkit::stack::ScratchDir::new("builds");
    std::fs::write(dir.path().join("big.bin"), build_bytes(8 * 1024 * 1024, 5)).expect("write");
    let builds = licence_server::releases::Builds::new(dir.path().canonicalize().expect("dir"));
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                let info = builds.file("big.bin").expect("hash").expect("file");
                assert_eq!(info.size, 8 * 1024 * 1024);
            });
        }
    });
    assert_eq!(builds.hashes_computed(), 1);
}

/// POSTs an unknown key to `route` of the licence API, from `address` through the trusted proxy
/// when one is given; the status, the body and `Retry-After`.
async fn guess(
    base: &str,
    client: &reqwest::Client,
    route: &str,
    address: Option<&str>,
) -> (u16, serde_json::Value, Option<String>) {
    let mut request = client
        .post(format!("{base}/api/license/{route}"))
        .json(&json!({"licenseKey": "GUESS-GUESS-GUESS-GUESS-GUESS", "instanceId": "x"}));
    if let Some(address) = address {
        request = request.header("X-Forwarded-For", address);
    }
    let resp = request.send().await.expect("POST");
    let retry = testkit::http::header(&resp, "retry-after");
    let (s, b) = answer(resp).await;
    (s, b, retry)
}

async fn activate_from(
    base: &str,
    client: &reqwest::Client,
) -> (u16, serde_json::Value, Option<String>) {
    guess(base, client, "activate", None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn licence_routes_are_rate_limited_per_address_across_replicas() {
    let app = spawn_app().await;
    let limited = [
        ("LICENCE_RATE_LIMIT_PER_MINUTE", "5"),
        ("WEBHOOK_RATE_LIMIT_PER_MINUTE", "3"),
    ];
    let a = app.start_instance_with(&limited).await;
    let b = app.start_instance_with(&limited).await;
    for base in [&a, &b, &a, &b, &a] {
        assert_eq!(activate_from(base, &app.client).await.0, 404);
    }
    let (s, body, retry) = activate_from(&b, &app.client).await;
    assert_error(s, &body, 429, "RATE_LIMITED");
    let retry: u64 = retry.expect("Retry-After").parse().expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    let resp = app
        .client
        .post(format!("{a}/api/license/validate"))
        .json(&json!({"licenseKey": "K", "instanceId": "x"}))
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 429, "validate shares the count");

    for _ in 0..3 {
        assert_eq!(forged_webhook(&a, &app.client).await, 401);
    }
    assert_eq!(forged_webhook(&b, &app.client).await, 429);
}

/// A webhook with a wrong signature sent to the replica at `base`; the answer's status.
async fn forged_webhook(base: &str, client: &reqwest::Client) -> u16 {
    let resp = client
        .post(format!("{base}/api/webhook/lemonsqueezy"))
        .header("x-signature", "00")
        .body("{}")
        .send()
        .await
        .expect("POST");
    resp.status().as_u16()
}

/// Each replica takes an address's requests from the shared counter in blocks and spends them
/// without the database. Under a parallel flood on two replicas the window must never let
/// through more than its limit, nor fewer than the limit less one block per replica (a block
/// is at most an eighth of what is left), every refusal must say when to come back, and the
/// shared counter must have handed out the whole limit and no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_flood_on_two_replicas_gets_the_limit_and_no_more() {
    use diesel::RunQueryDsl;
    const LIMIT: usize = 80;
    let app = spawn_app().await;
    let settings = [
        ("LICENCE_RATE_LIMIT_PER_MINUTE", "80"),
        ("TRUSTED_PROXIES", "127.0.0.1/32"),
    ];
    let replicas = [
        app.start_instance_with(&settings).await,
        app.start_instance_with(&settings).await,
    ];
    let flood = (0..3 * LIMIT).map(|i| {
        let base = replicas[i % 2].clone();
        let client = app.client.clone();
        async move { validate_from(&base, &client, "198.51.100.7").await }
    });
    let answers = futures_util::future::join_all(flood).await;
    let through = answers.iter().filter(|(s, _)| *s == 404).count();
    let refused: Vec<&Option<String>> = answers
        .iter()
        .filter(|(s, _)| *s == 429)
        .map(|(_, retry)| retry)
        .collect();
    assert!(
        (LIMIT - 2 * (LIMIT / 8)..=LIMIT).contains(&through),
        "let through: {through}"
    );
    assert_eq!(through + refused.len(), answers.len(), "only 404 and 429");
    for retry in refused {
        let secs: u64 = retry
            .as_deref()
            .expect("Retry-After")
            .parse()
            .expect("secs");
        assert!((1..=60).contains(&secs), "{secs}");
    }
    let mut conn = app.conn();
    let counted: Vec<Hits> = diesel::sql_query(
        "SELECT hits FROM licence_rate_limit WHERE bucket = 'licence:198.51.100.7'",
    )
    .load(&mut conn)
    .expect("counter");
    assert_eq!(counted.len(), 1);
    assert_eq!(usize::try_from(counted[0].hits).ok(), Some(LIMIT));

    // Another address is counted on its own.
    assert_eq!(
        validate_from(&replicas[1], &app.client, "198.51.100.8")
            .await
            .0,
        404
    );
}

#[derive(diesel::QueryableByName)]
struct Hits {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    hits: i32,
}

/// Validates an unknown key from `address` (through the trusted proxy on 127.0.0.1).
async fn validate_from(
    base: &str,
    client: &reqwest::Client,
    address: &str,
) -> (u16, Option<String>) {
    let (status, _, retry) = guess(base, client, "validate", Some(address)).await;
    (status, retry)
}

/// The counters live in a MEMORY table of bounded size, which clients of very many addresses could
/// fill. Full, it must neither answer 500 nor shut out every new client: counters whose window
/// has ended make room, and while every counter is live a new address is counted by the replica
/// alone, so that it is served and still limited. An IPv6 client counts as its /64, so that one
/// host cannot fill the table by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_rate_limit_table_makes_room_or_counts_new_addresses_in_the_replica() {
    use diesel::RunQueryDsl;
    let app = spawn_app().await;
    let base = app
        .start_instance_with(&[("TRUSTED_PROXIES", "127.0.0.1/32")])
        .await;
    let mut conn = app.conn();
    // The smallest MEMORY table MariaDB allows; the ceiling comes from the session rebuilding it.
    diesel::sql_query("SET SESSION max_heap_table_size = 16384")
        .execute(&mut conn)
        .expect("session size");
    diesel::sql_query("ALTER TABLE licence_rate_limit ENGINE = MEMORY")
        .execute(&mut conn)
        .expect("rebuild");
    let mut filled = 0;
    while diesel::sql_query(format!(
        "INSERT INTO licence_rate_limit (bucket, window_start, hits) \
         VALUES ('licence:10.9.{}.{}', UTC_TIMESTAMP(6), 1)",
        filled / 256,
        filled % 256
    ))
    .execute(&mut conn)
    .is_ok()
    {
        filled += 1;
        assert!(filled < 100_000, "the table never filled");
    }
    assert!(filled > 0);

    // Every counter is live: whoever filled the table does not shut the next person out. The
    // replica counts that address itself, against the same limit.
    let limit = 60;
    for n in 1..=limit {
        let (status, _) = validate_from(&base, &app.client, "192.0.2.1").await;
        assert_eq!(
            status, 404,
            "request {n} of a new address while the table is full"
        );
    }
    let (status, retry) = validate_from(&base, &app.client, "192.0.2.1").await;
    assert_eq!(status, 429, "still limited");
    let retry: u64 = retry.expect("Retry-After").parse().expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        validate_from(&base, &app.client, "192.0.2.2").await.0,
        404,
        "another new address has its own count"
    );

    diesel::sql_query(
        "UPDATE licence_rate_limit SET window_start = UTC_TIMESTAMP(6) - INTERVAL 2 MINUTE",
    )
    .execute(&mut conn)
    .expect("age the counters");
    assert_eq!(
        validate_from(&base, &app.client, "192.0.2.3").await.0,
        404,
        "ended windows made room: counted, then the unknown key"
    );
    for address in ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9"] {
        assert_eq!(validate_from(&base, &app.client, address).await.0, 404);
    }
    let counted: Vec<(String,)> = diesel::sql_query(
        "SELECT bucket FROM licence_rate_limit WHERE bucket LIKE 'licence:2001:%'",
    )
    .load::<Bucket>(&mut conn)
    .expect("buckets")
    .into_iter()
    .map(|b| (b.bucket,))
    .collect();
    assert_eq!(
        counted,
        [("licence:2001:db8:1:2::/64".to_owned(),)],
        "one /64, one counter"
    );
}

#[derive(diesel::QueryableByName)]
struct Bucket {
    #[diesel(sql_type = diesel::sql_types::Text)]
    bucket: String,
}

/// A plan or status the code does not know (the CHECK constraints admit none, but a manual edit
/// could write one) is an error of the server's data, never read as the least generous plan or
/// as an expired licence: the request fails with the contract's error body and takes nothing.
/// (Through the batched seat read every request of a failed statement answers 503; alone, 500.)
#[tokio::test]
async fn a_plan_the_code_does_not_know_is_an_error_not_basic() {
    use diesel::RunQueryDsl;
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let token = app.token(&key, "mac-1").await;
    let mut conn = app.conn();
    for sql in [
        "ALTER TABLE licence DROP CONSTRAINT licence_plan_check",
        "UPDATE licence SET plan = 'platinum'",
    ] {
        diesel::sql_query(sql).execute(&mut conn).expect(sql);
    }
    let server_error = |status: u16, body: &serde_json::Value| {
        assert!(
            matches!(
                (status, body["code"].as_str()),
                (500, Some("INTERNAL_ERROR")) | (503, Some("DATABASE_UNAVAILABLE"))
            ),
            "{status} {body}"
        );
    };
    let (status, body) = app
        .post(
            "/api/license/validate",
            &serde_json::json!({}),
            Some(&token),
        )
        .await;
    server_error(status, &body);
    let (status, body) = app
        .post("/api/usage/consume", &serde_json::json!({}), Some(&token))
        .await;
    server_error(status, &body);
    assert_eq!(app.count("daily_usage"), 0, "no unit taken");
}
