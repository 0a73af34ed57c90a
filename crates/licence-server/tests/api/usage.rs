//! Plans, features and the daily quota per Europe/Rome day.

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde_json::json;

use crate::helpers::{TestApp, assert_error, insert_licence, spawn_app, spawn_app_at};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("valid instant")
        .with_timezone(&Utc)
}

async fn consume(app: &TestApp, token: &str) -> (u16, serde_json::Value, Option<String>) {
    consume_at(&app.client, &app.base, token).await
}

/// A consumption sent to the replica at `base`.
async fn consume_at(
    client: &reqwest::Client,
    base: &str,
    token: &str,
) -> (u16, serde_json::Value, Option<String>) {
    let resp = client
        .post(format!("{base}/api/usage/consume"))
        .bearer_auth(token)
        .send()
        .await
        .expect("POST");
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (s, b) = crate::helpers::answer(resp).await;
    (s, b, retry_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_concurrent_consumes_on_basic_take_exactly_ten() {
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    let results = join_all((0..30).map(|_| consume(&app, &token))).await;
    let ok: Vec<_> = results.iter().filter(|r| r.0 == 200).collect();
    let refused: Vec<_> = results.iter().filter(|r| r.0 == 429).collect();
    assert_eq!((ok.len(), refused.len()), (10, 20), "{results:?}");
    let mut used: Vec<u64> = ok.iter().filter_map(|r| r.1["used"].as_u64()).collect();
    used.sort_unstable();
    assert_eq!(
        used,
        (1..=10).collect::<Vec<u64>>(),
        "each success counted once"
    );
    for (_, body, retry_after) in refused {
        assert_eq!(body["code"], "DAILY_QUOTA_EXCEEDED", "{body}");
        assert!(body["message"].is_string());
        assert_eq!(body["plan"], "basic");
        assert_eq!(body["used"], 10);
        assert_eq!(body["limit"], 10);
        assert_eq!(body["remaining"], 0);
        // 10:00 in Rome (CEST): the quota resets at 22:00 UTC, 14 hours later.
        assert_eq!(body["resetsAt"], "2026-06-10T22:00:00Z");
        assert_eq!(retry_after.as_deref(), Some("50400"));
    }
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b,
        json!({"plan": "basic", "features": ["audio"], "used": 10, "limit": 10, "remaining": 0,
               "resetsAt": "2026-06-10T22:00:00Z"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_day_resets_at_rome_midnight_on_the_spring_dst_day() {
    // Sunday 29 March 2026: Rome moves from CET to CEST, the day has 23 hours.
    let app = spawn_app_at(utc("2026-03-28T23:00:00Z")).await; // 00:00 in Rome, 29 March
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    for i in 1..=10 {
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!((s, b["used"].as_u64()), (200, Some(i)), "{b}");
        assert_eq!(b["resetsAt"], "2026-03-29T22:00:00Z");
    }
    // 23:59:59 in Rome (CEST): still the same day.
    app.clock.set(utc("2026-03-29T21:59:59Z"));
    let (s, b, _) = consume(&app, &token).await;
    assert_error(s, &b, 429, "DAILY_QUOTA_EXCEEDED");
    let token = app.token(&key, "pc").await;
    // Midnight in Rome: 23 hours after the day began.
    app.clock.set(utc("2026-03-29T22:00:00Z"));
    let (s, b, _) = consume(&app, &token).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["used"], 1);
    assert_eq!(b["remaining"], 9);
    assert_eq!(b["resetsAt"], "2026-03-30T22:00:00Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_day_resets_at_rome_midnight_on_the_autumn_dst_day() {
    // Sunday 25 October 2026: CEST back to CET, the day has 25 hours.
    let app = spawn_app_at(utc("2026-10-24T22:00:00Z")).await; // 00:00 in Rome, 25 October
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    for _ in 0..10 {
        assert_eq!(consume(&app, &token).await.0, 200);
    }
    // 24 hours later it is only 23:00 in Rome: the same day, still exhausted.
    app.clock.set(utc("2026-10-25T22:00:00Z"));
    let token = app.token(&key, "pc").await;
    let (s, b, retry_after) = consume(&app, &token).await;
    assert_error(s, &b, 429, "DAILY_QUOTA_EXCEEDED");
    assert_eq!(b["resetsAt"], "2026-10-25T23:00:00Z");
    assert_eq!(retry_after.as_deref(), Some("3600"));
    app.clock.set(utc("2026-10-25T23:00:00Z"));
    let (s, b, _) = consume(&app, &token).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "{b}");
    assert_eq!(b["resetsAt"], "2026-10-26T23:00:00Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_each_plan() {
    let app = spawn_app().await;
    for (plan, limit, features) in [
        ("basic", 10, json!(["audio"])),
        ("pro", 30, json!(["audio", "video", "image", "export"])),
        ("premium", 150, json!(["audio", "video", "image", "export"])),
        ("annual", 30, json!(["audio", "video", "image", "export"])),
    ] {
        let key = app.licence(plan, "active");
        let token = app.token(&key, "pc").await;
        let (s, b) = app.get("/api/usage/status", Some(&token)).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["plan"], plan);
        assert_eq!(b["limit"], limit);
        assert_eq!(b["used"], 0);
        assert_eq!(b["remaining"], limit);
        assert_eq!(b["features"], features);
        assert!(b["resetsAt"].as_str().is_some_and(|t| t.ends_with('Z')));
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!((s, &b["remaining"]), (200, &json!(limit - 1)), "{b}");
    }
    let (s, b) = app.get("/api/usage/status", None).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consuming_needs_an_active_licence_and_installation() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let token = app.token(&key, "pc").await;
    let (s, _) = app.deactivate(&key, "pc").await;
    assert_eq!(s, 200);
    let (s, b, _) = consume(&app, &token).await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
}

/// A consumption takes a unit exactly when the licence grants access, whichever way it does:
/// a plainly active licence takes its unit in the statement that reads the seat, the others
/// (on trial, past due, cancelled with a paid end) with a statement of their own, and a refused
/// request leaves the count alone, at the boundaries of `expires_at` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_is_taken_exactly_when_the_licence_grants_access() {
    use diesel::prelude::*;
    use licence_server::clock::Clock;
    use licence_server::schema::{daily_usage, licence};
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let now = app.clock.now().naive_utc();
    let micro = chrono::Duration::microseconds(1);
    let day = chrono::Duration::days(1);
    // (status, expires_at, disabled, grants access)
    let cases = [
        ("active", None, false, true),
        ("active", Some(now + micro), false, true),
        ("active", Some(now), false, false),
        ("active", Some(now - day), false, false),
        ("active", None, true, false),
        ("on_trial", None, false, true),
        ("on_trial", Some(now), false, false),
        ("past_due", None, false, true),
        ("cancelled", Some(now + day), false, true),
        ("cancelled", Some(now + day), true, false),
        ("cancelled", None, false, false),
        ("cancelled", Some(now), false, false),
        ("paused", None, false, false),
        ("expired", None, false, false),
        ("unpaid", None, false, false),
        ("refunded", Some(now + day), false, false),
    ];
    let mut conn = app.conn();
    for (status, expires_at, disabled, access) in cases {
        let case = format!("{status}, expires {expires_at:?}, disabled {disabled}");
        let key = app.licence("pro", "active");
        let token = app.token(&key, "pc").await;
        let id: String = diesel::update(licence::table.filter(licence::license_key.eq(&key)))
            .set((
                licence::status.eq(status),
                licence::expires_at.eq(expires_at),
                licence::disabled_at.eq(disabled.then_some(now)),
            ))
            .execute(&mut conn)
            .and_then(|_| {
                licence::table
                    .filter(licence::license_key.eq(&key))
                    .select(licence::id)
                    .first(&mut conn)
            })
            .expect("licence state");
        for n in 1..=2 {
            let (s, b, _) = consume(&app, &token).await;
            if access {
                assert_eq!(
                    (s, &b["used"], &b["limit"]),
                    (200, &json!(n), &json!(30)),
                    "{case}: {b}"
                );
            } else {
                assert_error(s, &b, 403, "LICENSE_INACTIVE");
            }
        }
        let used: Vec<i32> = daily_usage::table
            .filter(daily_usage::licence_id.eq(&id))
            .select(daily_usage::used)
            .load(&mut conn)
            .expect("usage");
        let expected = if access { vec![2] } else { vec![] };
        assert_eq!(used, expected, "{case}");
    }
}

/// A connection of its own for one thread of a concurrency test, on which a lock wait fails
/// within seconds instead of the server's 50.
fn impatient_connection(url: &str) -> diesel::MysqlConnection {
    let mut conn = <diesel::MysqlConnection as diesel::Connection>::establish(url).expect("conn");
    diesel::RunQueryDsl::execute(
        diesel::sql_query("SET SESSION innodb_lock_wait_timeout = 5"),
        &mut conn,
    )
    .expect("session setting");
    conn
}

/// The quota counter itself, on as many connections as a busy replica has: many licences take
/// their first unit of a day at the same moment (the day's row does not exist yet), several
/// requests per licence at once. None of them may fail (a deadlock between two first requests
/// would answer 500), and each licence ends with exactly the units that were answered as taken.
#[test]
fn first_units_of_a_day_taken_at_once_never_deadlock() {
    use licence_server::repo::usage;
    use std::sync::{Arc, Barrier};
    let db = testkit::mariadb::TestMariaDb::migrated(licence_server::db::migrate);
    let mut setup = db.connect();
    // Four requests per licence and round against a limit of three: three taken, one refused.
    let licences: Vec<String> = (0..4)
        .map(|_| insert_licence(&mut setup, "basic", "active").id)
        .collect();
    let day = chrono::NaiveDate::from_ymd_opt(2026, 6, 10).expect("date");
    const THREADS: usize = 16;
    const ROUNDS: usize = 4;
    const LIMIT: u32 = 3;
    let barrier = Arc::new(Barrier::new(THREADS));
    let licences = Arc::new(licences);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (barrier, licences, url) = (
                Arc::clone(&barrier),
                Arc::clone(&licences),
                db.url().to_owned(),
            );
            std::thread::spawn(move || {
                let mut conn = impatient_connection(&url);
                let mut taken = Vec::new();
                for round in 0..ROUNDS {
                    let day = day + chrono::Days::new(round as u64);
                    let id = &licences[t % licences.len()];
                    barrier.wait();
                    let outcome = usage::consume(&mut conn, id, day, LIMIT);
                    taken.push((id.clone(), day, outcome.map_err(|e| e.to_string())));
                }
                taken
            })
        })
        .collect();
    let mut per_day = std::collections::BTreeMap::<(String, chrono::NaiveDate), Vec<u32>>::new();
    for handle in handles {
        for (id, day, outcome) in handle.join().expect("thread") {
            let (taken, used) = outcome.expect("a consumption failed");
            if taken {
                per_day.entry((id, day)).or_default().push(used);
            } else {
                assert_eq!(used, LIMIT, "refused only at the limit");
            }
        }
    }
    let mut conn = db.connect();
    for ((id, day), mut counts) in per_day {
        counts.sort_unstable();
        let expected: Vec<u32> = (1..=LIMIT).collect();
        assert_eq!(counts, expected, "each unit answered once, in order");
        assert_eq!(usage::used(&mut conn, &id, day).expect("used"), LIMIT);
    }
}

/// The same through the statement a consumption without a key sends, which also reads the
/// licence and the seat: sixteen requests of one installation at once, on four days' first
/// requests, against Basic's quota of ten. None may fail, ten are taken each day in order, the
/// rest are refused at the limit.
#[test]
fn units_taken_with_the_seat_at_once_keep_the_quota() {
    use licence_server::repo::{activations, usage};
    use std::sync::{Arc, Barrier};
    let db = testkit::mariadb::TestMariaDb::migrated(licence_server::db::migrate);
    let mut setup = db.connect();
    let licence = insert_licence(&mut setup, "basic", "active");
    let now = utc("2026-06-10T08:00:00Z");
    let activated = activations::activate(
        &mut setup,
        &licence.license_key,
        "pc",
        None,
        now,
        chrono::Duration::days(30),
    )
    .expect("activate");
    assert!(matches!(activated, activations::Activated::Done { .. }));
    let day = chrono::NaiveDate::from_ymd_opt(2026, 6, 10).expect("date");
    const THREADS: usize = 16;
    const ROUNDS: usize = 4;
    const LIMIT: u32 = 10;
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (barrier, id, url) = (
                Arc::clone(&barrier),
                licence.id.clone(),
                db.url().to_owned(),
            );
            std::thread::spawn(move || {
                let mut conn = impatient_connection(&url);
                (0..ROUNDS)
                    .map(|round| {
                        let day = day + chrono::Days::new(round as u64);
                        barrier.wait();
                        let found =
                            activations::seat_and_take(&mut conn, &id, "pc", day, now.naive_utc())
                                .map_err(|e| e.to_string());
                        (day, found.map(|f| f.and_then(|f| f.taken)))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut per_day = std::collections::BTreeMap::<chrono::NaiveDate, Vec<u32>>::new();
    for handle in handles {
        for (day, found) in handle.join().expect("thread") {
            let taken = found.expect("a consumption failed");
            let (taken, used) = taken.expect("an active Basic licence takes in the statement");
            if taken {
                per_day.entry(day).or_default().push(used);
            } else {
                assert_eq!(used, LIMIT, "refused only at the limit");
            }
        }
    }
    assert_eq!(per_day.len(), ROUNDS);
    let mut conn = db.connect();
    for (day, mut counts) in per_day {
        counts.sort_unstable();
        assert_eq!(
            counts,
            (1..=LIMIT).collect::<Vec<u32>>(),
            "each unit answered once"
        );
        assert_eq!(
            usage::used(&mut conn, &licence.id, day).expect("used"),
            LIMIT
        );
    }
}

/// The value of `licence_statements_total` for `path` in the service's metrics.
async fn statements(app: &TestApp, path: &str) -> f64 {
    app.metric(&format!("licence_statements_total{{path=\"{path}\"}}"))
        .await
}

/// validate and consume send their statements over the worker's own connections; when those
/// are lost, a request either answers 503 or is answered through the pool, and every unit a
/// consumption reported taken is counted exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_own_connections_serve_validate_and_consume_and_losing_them_loses_no_unit() {
    let app = spawn_app().await;
    let key = app.licence("premium", "active");
    let token = app.token(&key, "pc").await;
    let before = statements(&app, "direct").await;
    for _ in 0..3 {
        let (s, b) = app
            .post("/api/license/validate", &json!({}), Some(&token))
            .await;
        assert_eq!(s, 200, "{b}");
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!(s, 200, "{b}");
    }
    assert!(
        statements(&app, "direct").await - before >= 6.0,
        "three validates and three consumes took the direct path"
    );

    // Every connection to the database drops, as when it restarts.
    app.proxy.cut();
    app.proxy.restore();
    let mut taken = 3;
    let mut validated = false;
    for _ in 0..40 {
        let (s, b, _) = consume(&app, &token).await;
        match s {
            200 => {
                taken += 1;
                assert_eq!(b["used"], taken, "{b}");
            }
            503 => assert_eq!(b["code"], "DATABASE_UNAVAILABLE", "{b}"),
            _ => panic!("consume after the connections dropped: {s} {b}"),
        }
        let (s, b) = app
            .post("/api/license/validate", &json!({}), Some(&token))
            .await;
        match s {
            200 => validated = true,
            503 => assert_eq!(b["code"], "DATABASE_UNAVAILABLE", "{b}"),
            _ => panic!("validate after the connections dropped: {s} {b}"),
        }
        if validated && taken >= 8 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        validated && taken >= 8,
        "the service recovers: {taken} units"
    );
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["used"], taken, "each unit counted once: {b}");
}

/// A token names the plan its licence had when it was issued. A consumption is counted against
/// the licence's plan at the time of the request, both ways: an upgrade since the token raises
/// the limit at once, a downgrade lowers it, and the answer names the plan it was counted on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_before_a_plan_change_consumes_on_the_licence_s_plan() {
    use diesel::prelude::*;
    use licence_server::schema::licence;
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let mut conn = app.conn();
    let set_plan = |conn: &mut diesel::MysqlConnection, key: &str, plan: &str| {
        diesel::update(licence::table.filter(licence::license_key.eq(key)))
            .set(licence::plan.eq(plan))
            .execute(conn)
            .expect("plan");
    };

    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    for n in 1..=10 {
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!(
            (s, &b["used"], &b["plan"]),
            (200, &json!(n), &json!("basic")),
            "{b}"
        );
    }
    let (s, b, _) = consume(&app, &token).await;
    assert_error(s, &b, 429, "DAILY_QUOTA_EXCEEDED");
    set_plan(&mut conn, &key, "premium");
    let (s, b, _) = consume(&app, &token).await;
    assert_eq!(s, 200, "the upgrade counts at once: {b}");
    assert_eq!(
        (&b["used"], &b["limit"], &b["plan"]),
        (&json!(11), &json!(150), &json!("premium")),
        "{b}"
    );

    let key = app.licence("premium", "active");
    let token = app.token(&key, "pc").await;
    for n in 1..=12 {
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!(
            (s, &b["used"], &b["limit"]),
            (200, &json!(n), &json!(150)),
            "{b}"
        );
    }
    set_plan(&mut conn, &key, "basic");
    let (s, b, _) = consume(&app, &token).await;
    assert_error(s, &b, 429, "DAILY_QUOTA_EXCEEDED");
    assert_eq!(
        (&b["used"], &b["limit"], &b["plan"]),
        (&json!(12), &json!(10), &json!("basic")),
        "the downgrade counts at once and takes nothing: {b}"
    );
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!((s, &b["used"]), (200, &json!(12)), "{b}");
}

/// A statement MariaDB refuses with an error (here a trigger that refuses the first write of the
/// day's count, as a deadlock or a lock wait that timed out would) took no effect, so the
/// consumption is answered through the pool instead of with a 503, and takes its unit once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_refused_on_the_workers_connection_is_answered_through_the_pool() {
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let key = app.licence("pro", "active");
    let token = app.token(&key, "pc").await;
    let mut conn = app.conn();
    // A MEMORY table keeps its row whatever becomes of the statement that changed it, so the
    // trigger refuses once and then lets every write through.
    conn.batch_execute(
        "CREATE TABLE refuse_once (refused INT NOT NULL) ENGINE = MEMORY;
         INSERT INTO refuse_once VALUES (0);
         CREATE TRIGGER daily_usage_refuse_once BEFORE INSERT ON daily_usage FOR EACH ROW
         BEGIN
           IF (SELECT refused FROM refuse_once) = 0 THEN
             UPDATE refuse_once SET refused = 1;
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused once';
           END IF;
         END",
    )
    .expect("trigger");
    let (direct, pool) = (
        statements(&app, "direct").await,
        statements(&app, "pool").await,
    );
    let (s, b, _) = consume(&app, &token).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "{b}");
    let refused: i32 = diesel::sql_query("SELECT refused FROM refuse_once")
        .load::<Refused>(&mut conn)
        .expect("flag")[0]
        .refused;
    assert_eq!(refused, 1, "the worker's statement was refused");
    assert_eq!(
        statements(&app, "direct").await,
        direct,
        "nothing was answered directly"
    );
    assert!(statements(&app, "pool").await > pool, "the pool answered");
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "one unit: {b}");
}

#[derive(diesel::QueryableByName)]
struct Refused {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    refused: i32,
}

/// Two replicas take units of one licence at once, each over its workers' own connections: the
/// quota holds across them, each unit is answered once, and every refusal reports the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_consuming_at_once_take_exactly_the_quota() {
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    let replicas = [app.base.clone(), app.start_instance_with(&[]).await];
    let direct = statements(&app, "direct").await;
    let results =
        join_all((0..40).map(|i| consume_at(&app.client, &replicas[i % 2], &token))).await;
    let mut used: Vec<u64> = results
        .iter()
        .filter(|r| r.0 == 200)
        .filter_map(|r| r.1["used"].as_u64())
        .collect();
    used.sort_unstable();
    assert_eq!(used, (1..=10).collect::<Vec<u64>>(), "{results:?}");
    for (s, b, _) in results.iter().filter(|r| r.0 != 200) {
        assert_error(*s, b, 429, "DAILY_QUOTA_EXCEEDED");
        assert_eq!(b["used"], 10, "{b}");
    }
    // The replicas run in this one process and count into the same metrics.
    assert!(
        statements(&app, "direct").await - direct >= 40.0,
        "every consumption was answered over a worker's own connection"
    );
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!((s, &b["used"]), (200, &json!(10)), "{b}");
}

/// Many licences consumed at once: while a worker has its statements in flight, the
/// consumptions that arrive are sent together in one statement, and each still takes exactly
/// its own licence's units. In the same crowd, a licence disabled after its token was issued is refused and keeps
/// no count, and one upgraded since consumes on its new plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumptions_sent_together_each_take_exactly_their_own_units() {
    use diesel::prelude::*;
    use licence_server::clock::Clock;
    use licence_server::schema::{daily_usage, licence};
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let mut conn = app.conn();
    let mut basic = Vec::new();
    for i in 0..16 {
        let key = app.licence("basic", "active");
        basic.push(app.token(&key, &format!("pc-{i}")).await);
    }
    let disabled_key = app.licence("pro", "active");
    let disabled = app.token(&disabled_key, "pc").await;
    diesel::update(licence::table.filter(licence::license_key.eq(&disabled_key)))
        .set(licence::disabled_at.eq(Some(app.clock.now().naive_utc())))
        .execute(&mut conn)
        .expect("disable");
    let upgraded_key = app.licence("basic", "active");
    let upgraded = app.token(&upgraded_key, "pc").await;
    diesel::update(licence::table.filter(licence::license_key.eq(&upgraded_key)))
        .set(licence::plan.eq("premium"))
        .execute(&mut conn)
        .expect("upgrade");

    let together = app
        .metric("licence_requests_together_total{route=\"consume\"}")
        .await;
    // Twelve rounds over every token, so that each request has others of other licences
    // beside it: 16 × 12 Basic consumptions, and 12 for each of the two others.
    let mut tokens: Vec<(usize, &str)> = Vec::new();
    for _ in 0..12 {
        tokens.extend(basic.iter().enumerate().map(|(i, t)| (i, t.as_str())));
        tokens.push((16, &disabled));
        tokens.push((17, &upgraded));
    }
    let app = &app;
    let results = join_all(
        tokens
            .iter()
            .map(|(i, t)| async move { (*i, consume_at(&app.client, &app.base, t).await) }),
    )
    .await;
    for licence in 0..16 {
        let mine: Vec<_> = results.iter().filter(|(i, _)| *i == licence).collect();
        let mut used: Vec<u64> = mine
            .iter()
            .filter(|(_, r)| r.0 == 200)
            .filter_map(|(_, r)| r.1["used"].as_u64())
            .collect();
        used.sort_unstable();
        assert_eq!(
            used,
            (1..=10).collect::<Vec<u64>>(),
            "licence {licence}: {mine:?}"
        );
        for (_, (s, b, _)) in mine.iter().filter(|(_, r)| r.0 != 200) {
            assert_error(*s, b, 429, "DAILY_QUOTA_EXCEEDED");
            assert_eq!(b["used"], 10, "{b}");
        }
    }
    for (_, (s, b, _)) in results.iter().filter(|(i, _)| *i == 16) {
        assert_error(*s, b, 403, "LICENSE_INACTIVE");
    }
    let mut upgraded_used: Vec<u64> = results
        .iter()
        .filter(|(i, _)| *i == 17)
        .map(|(_, (s, b, _))| {
            assert_eq!((s, &b["plan"]), (&200, &json!("premium")), "{b}");
            b["used"].as_u64().unwrap_or_default()
        })
        .collect();
    upgraded_used.sort_unstable();
    assert_eq!(upgraded_used, (1..=12).collect::<Vec<u64>>());
    let disabled_id: String = licence::table
        .filter(licence::license_key.eq(&disabled_key))
        .select(licence::id)
        .first(&mut conn)
        .expect("id");
    let disabled_rows: i64 = daily_usage::table
        .filter(daily_usage::licence_id.eq(&disabled_id))
        .count()
        .get_result(&mut conn)
        .expect("count");
    assert_eq!(disabled_rows, 0, "the disabled licence took nothing");
    assert!(
        app.metric("licence_requests_together_total{route=\"consume\"}")
            .await
            > together,
        "some consumptions were sent together"
    );
}
