//! Sign-in and sign-up rate limits, per client address and per e-mail address, shared by all
//! replicas through Postgres.

use serde_json::json;

use crate::helpers::{TestApp, send, spawn_auth_replica, spawn_with};

fn limits(max: u32, window: u32) -> Vec<(String, String)> {
    vec![
        ("AUTH_RATE_LIMIT_MAX".into(), max.to_string()),
        ("AUTH_RATE_LIMIT_WINDOW_SECS".into(), window.to_string()),
        ("TRUSTED_PROXIES".into(), "127.0.0.1".into()),
    ]
}

/// A sign-in at the service `base` from `client_ip` (as the trusted proxy forwards it).
async fn attempt_with(
    base: &str,
    app: &TestApp,
    email: &str,
    password: &str,
    client_ip: &str,
) -> crate::helpers::Resp {
    send(
        app.http
            .post(format!("{base}/api/auth/sign-in/email"))
            .header("x-forwarded-for", client_ip)
            .json(&json!({ "email": email, "password": password })),
    )
    .await
}

/// A sign-in with a wrong password.
async fn attempt(
    app_base: &str,
    app: &TestApp,
    email: &str,
    client_ip: &str,
) -> crate::helpers::Resp {
    attempt_with(app_base, app, email, "wrong-password", client_ip).await
}

#[tokio::test]
async fn per_address_limit_with_retry_after() {
    let app = spawn_with(&limits(3, 10)).await;
    for i in 0..3 {
        let r = attempt(
            &app.base,
            &app,
            &format!("user{i}@example.com"),
            "198.51.100.7",
        )
        .await;
        assert_eq!(r.status, 401, "attempt {i}");
    }
    let limited = attempt(&app.base, &app, "user9@example.com", "198.51.100.7").await;
    assert_eq!(limited.status_and_code(), (429, Some("RATE_LIMITED")));
    let retry: u64 = limited
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=10).contains(&retry), "{retry}");
    assert_eq!(
        limited.header("x-retry-after"),
        Some(retry.to_string()),
        "the header better-auth's client reads"
    );
    assert_eq!(
        limited.body["message"],
        "Too many requests. Please try again later."
    );
    // The counters name neither the client address nor the e-mail address.
    let keys = app
        .scalar("SELECT string_agg(key, ' ') AS v FROM auth.rate_limit")
        .unwrap_or_default();
    assert!(keys.contains("sign-in:ip:"), "{keys}");
    for clear in ["198.51.100.7", "user0@example.com", "example.com"] {
        assert!(!keys.contains(clear), "{clear} stored in clear: {keys}");
    }
    // Another client address is not affected.
    let other = attempt(&app.base, &app, "user9@example.com", "198.51.100.8").await;
    assert_eq!(other.status, 401);
}

fn with(mut base: Vec<(String, String)>, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    for (k, v) in extra {
        base.retain(|(key, _)| key != k);
        base.push(((*k).to_owned(), (*v).to_owned()));
    }
    base
}

#[tokio::test]
async fn failures_count_per_address_and_email_and_nobody_locks_the_owner_out() {
    let app = spawn_with(&with(
        limits(100, 10),
        &[
            ("AUTH_SIGN_IN_FAILURES_MAX", "2"),
            ("AUTH_SIGN_IN_EMAIL_FAILURES_MAX", "4"),
            ("AUTH_SIGN_IN_FAILURES_WINDOW_SECS", "60"),
        ],
    ))
    .await;
    app.sign_up("target@example.com", "right-password").await;
    let try_as = |ip: &'static str, password: &'static str| {
        attempt_with(&app.base, &app, "target@example.com", password, ip)
    };
    // One address: two failures, then refused for that e-mail address, even with the right
    // password, which it cannot try any more.
    assert_eq!(try_as("203.0.113.1", "wrong-1").await.status, 401);
    assert_eq!(try_as("203.0.113.1", "wrong-2").await.status, 401);
    let refused = try_as("203.0.113.1", "right-password").await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(refused.body["limit"]["scope"], "address+email");
    assert_eq!(refused.body["limit"]["max"], 2);
    assert_eq!(refused.body["limit"]["windowSecs"], 60);
    assert!(refused.header("retry-after").is_some());
    // The same address may still sign in to another account.
    assert_eq!(
        attempt_with(&app.base, &app, "other@example.com", "x", "203.0.113.1")
            .await
            .status,
        401
    );
    // Failures from a second address spend the e-mail address's budget (4)...
    assert_eq!(try_as("203.0.113.2", "wrong-3").await.status, 401);
    assert_eq!(try_as("203.0.113.2", "wrong-4").await.status, 401);
    // ...after which an address that failed once for it is refused at once,
    assert_eq!(try_as("203.0.113.3", "wrong-5").await.status, 401);
    let spent = try_as("203.0.113.3", "wrong-6").await;
    assert_eq!(spent.status, 429, "{}", spent.text);
    assert_eq!(spent.body["limit"]["scope"], "email-failures");
    assert_eq!(spent.body["limit"]["max"], 4);
    // ...while the owner, from an address that never failed, still signs in.
    let owner = try_as("198.51.100.50", "right-password").await;
    assert_eq!(owner.status, 200, "{}", owner.text);
    // The e-mail address is normalised before counting.
    let upper = attempt_with(&app.base, &app, "TARGET@example.com", "x", "203.0.113.3").await;
    assert_eq!(upper.status, 429);
}

#[tokio::test]
async fn ipv6_clients_count_per_64() {
    let app = spawn_with(&limits(3, 10)).await;
    for ip in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:abcd::3"] {
        let r = attempt(
            &app.base,
            &app,
            &format!("{ip}@example.com").replace(':', "x"),
            ip,
        )
        .await;
        assert_eq!(r.status, 401, "{ip}: {}", r.text);
    }
    let limited = attempt(
        &app.base,
        &app,
        "z@example.com",
        "2001:db8:1:2:ffff:ffff:ffff:ffff",
    )
    .await;
    assert_eq!(limited.status, 429, "the same /64");
    assert_eq!(limited.body["limit"]["scope"], "address");
    assert_eq!(limited.body["limit"]["max"], 3);
    assert_eq!(limited.body["limit"]["windowSecs"], 10);
    let next = attempt(&app.base, &app, "z@example.com", "2001:db8:1:3::1").await;
    assert_eq!(next.status, 401, "the next /64 is another client");
}

#[tokio::test]
async fn a_global_budget_over_all_addresses_shared_by_replicas() {
    let settings = with(
        limits(3, 10),
        &[
            ("AUTH_SIGN_IN_GLOBAL_MAX", "5"),
            ("AUTH_SIGN_IN_GLOBAL_WINDOW_SECS", "30"),
        ],
    );
    let app = spawn_with(&settings).await;
    let replica = spawn_auth_replica(&app, &settings).await;
    for i in 0..5 {
        let base = if i % 2 == 0 { &app.base } else { &replica.base };
        let r = attempt(
            base,
            &app,
            &format!("g{i}@example.com"),
            &format!("192.0.2.{}", 10 + i),
        )
        .await;
        assert_eq!(r.status, 401, "attempt {i}: {}", r.text);
    }
    for base in [&app.base, &replica.base] {
        let r = attempt(base, &app, "late@example.com", "192.0.2.99").await;
        assert_eq!(r.status, 429, "{}", r.text);
        assert_eq!(r.body["limit"]["scope"], "all");
        assert_eq!(r.body["limit"]["max"], 5);
        assert_eq!(r.body["limit"]["windowSecs"], 30);
        let retry: u64 = r
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After");
        assert!((1..=30).contains(&retry), "{retry}");
    }
}

#[tokio::test]
async fn two_instances_share_the_limit_and_the_window_ends() {
    let app = spawn_with(&limits(3, 2)).await;
    let replica = spawn_auth_replica(&app, &limits(3, 2)).await;
    assert_eq!(
        attempt(&app.base, &app, "a@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&replica.base, &app, "b@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&app.base, &app, "c@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&replica.base, &app, "d@example.com", "192.0.2.1")
            .await
            .status,
        429
    );
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(
        attempt(&replica.base, &app, "e@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn sign_up_is_limited_too() {
    let app = spawn_with(&limits(2, 10)).await;
    for i in 0..2 {
        let r = app
            .try_sign_up("N", &format!("n{i}@example.com"), "password-1")
            .await;
        assert_eq!(r.status, 200);
    }
    let r = app.try_sign_up("N", "n9@example.com", "password-1").await;
    assert_eq!(r.status, 429);
    assert_eq!(app.count("auth.\"user\""), 2);
}

/// The global budget is a ceiling on the sign-ins that reach a password check, never a switch
/// one client can flip: attempts its own address limit already refused do not count there.
#[tokio::test]
async fn one_address_flooding_sign_in_never_spends_the_global_budget() {
    let settings = with(
        limits(3, 60),
        &[
            ("AUTH_SIGN_IN_GLOBAL_MAX", "10"),
            ("AUTH_SIGN_IN_GLOBAL_WINDOW_SECS", "60"),
        ],
    );
    let app = spawn_with(&settings).await;
    let (_, _) = app.sign_up("victim@example.com", "password-123").await;
    let emails: Vec<String> = (0..40).map(|i| format!("x{i}@example.com")).collect();
    let flood = emails
        .iter()
        .map(|e| attempt(&app.base, &app, e, "203.0.113.66"));
    let answers = futures_util::future::join_all(flood).await;
    let refused = answers.iter().filter(|r| r.status == 429).count();
    assert!(
        refused >= 37,
        "the address's own limit refuses the flood ({refused})"
    );
    let r = attempt_with(
        &app.base,
        &app,
        "victim@example.com",
        "password-123",
        "198.51.100.20",
    )
    .await;
    assert_eq!(r.status, 200, "another person signs in: {}", r.text);
}

async fn sign_up_from(app: &TestApp, email: &str, client_ip: &str) -> crate::helpers::Resp {
    send(
        app.http
            .post(format!("{}/api/auth/sign-up/email", app.base))
            .header("x-forwarded-for", client_ip)
            .json(&json!({ "name": "N", "email": email, "password": "password-1" })),
    )
    .await
}

/// Sign-ups from many addresses together are bounded too (each costs a password hash), and as
/// for sign-in, only sign-ups that passed their own address's limit count there.
#[tokio::test]
async fn sign_ups_from_all_addresses_share_a_global_budget() {
    let settings = with(
        limits(2, 60),
        &[
            ("AUTH_SIGN_UP_GLOBAL_MAX", "4"),
            ("AUTH_SIGN_UP_GLOBAL_WINDOW_SECS", "60"),
        ],
    );
    let app = spawn_with(&settings).await;
    // One address over its own limit spends nothing of the global budget.
    for i in 0..10 {
        sign_up_from(&app, &format!("flood{i}@example.com"), "203.0.113.9").await;
    }
    for i in 0..2 {
        let r = sign_up_from(
            &app,
            &format!("ok{i}@example.com"),
            &format!("198.51.100.{}", 30 + i),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = sign_up_from(&app, "late@example.com", "198.51.100.99").await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.body["limit"]["scope"], "all");
    assert_eq!(app.count("auth.\"user\""), 4);
}

/// Deleting the account with a password costs a hash: it is limited per address and per user,
/// so a signed-in client can neither keep the hashing workers busy nor guess the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_user_with_a_password_is_rate_limited() {
    let app = spawn_with(&limits(3, 60)).await;
    let (cookie, _) = app.sign_up("keeper@example.com", "password-123").await;
    let tries = (0..10).map(|_| {
        app.post(
            "/api/auth/delete-user",
            json!({ "password": "wrong-password" }),
            Some(&cookie),
        )
    });
    let answers = futures_util::future::join_all(tries).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    let count = |status: u16| statuses.iter().filter(|s| **s == status).count();
    // Three tries reach the password; the rest are refused before it. Under the load of the
    // whole test run a try may also meet a busy server (503) instead, which checks nothing.
    assert!(count(400) <= 3, "more than 3 password checks: {statuses:?}");
    assert_eq!(count(400) + count(429) + count(503), 10, "{statuses:?}");
    assert!(count(429) + count(503) >= 7, "{statuses:?}");
    assert!(
        answers
            .iter()
            .filter(|r| r.status == 429)
            .all(|r| r.header("retry-after").is_some())
    );
    assert_eq!(app.count("auth.\"user\""), 1);
}
