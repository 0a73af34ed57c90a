//! Plans, features and the daily quota per Europe/Rome day.

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde_json::{Value, json};

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
    let retry_after = testkit::http::header(&resp, "retry-after");
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
    app.assert_get_needs_token("/api/usage/status").await;
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

/// Runs `work` on a thread of its own with a door of one connection to `url`, as one worker of
/// the service has (a local task set: the door's coalescers are worker-local).
fn on_a_worker<T: Send + 'static>(
    url: String,
    work: impl AsyncFnOnce(&licence_server::repo::Db) -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let opts =
            licence_server::db::connect_options(&service_kit::Secret::new(url)).expect("options");
        tokio::task::LocalSet::new().block_on(&runtime, async move {
            let db = licence_server::repo::Db::new(licence_server::db::pool(&opts, 1));
            work(&db).await
        })
    })
}

/// A seat for `instance_id` on the licence `key`, as activate leaves it.
fn seat(conn: &mut diesel::MysqlConnection, licence_id: &str, instance_id: &str) {
    use diesel::prelude::*;
    use licence_server::schema::activation;
    let now = chrono::Utc::now().naive_utc();
    diesel::insert_into(activation::table)
        .values((
            activation::id.eq(licence_server::repo::new_id()),
            activation::licence_id.eq(licence_id),
            activation::instance_id.eq(instance_id),
            activation::created_at.eq(now),
            activation::last_validated_at.eq(now),
        ))
        .execute(conn)
        .expect("seat");
}

/// What one worker of [`take_in_rounds`] was answered: the licence, the day and the outcome.
type Outcome = (
    licence_server::repo::LicenceId,
    chrono::NaiveDate,
    Result<licence_server::repo::usage::Taken, String>,
);

/// `threads` workers, each on a connection of its own, take one unit of Basic for the
/// installation "pc" per round on `rounds` consecutive days from 2026-06-10, all workers of a
/// round at once. Worker `t` asks for `licences[t % licences.len()]`, with access already checked
/// by the caller when `access_checked(t)`. Every answer, worker by worker.
fn take_in_rounds(
    db_url: &str,
    licences: Vec<licence_server::repo::LicenceId>,
    threads: usize,
    rounds: usize,
    access_checked: fn(usize) -> bool,
) -> Vec<Outcome> {
    use licence_server::repo::usage::{self, Take};
    use std::sync::{Arc, Barrier};
    let first_day = chrono::NaiveDate::from_ymd_opt(2026, 6, 10).expect("date");
    let barrier = Arc::new(Barrier::new(threads));
    let licences = Arc::new(licences);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (barrier, licences) = (Arc::clone(&barrier), Arc::clone(&licences));
            on_a_worker(db_url.to_owned(), async move |db| {
                let mut taken = Vec::new();
                for round in 0..rounds {
                    let day = first_day + chrono::Days::new(round as u64);
                    let id = &licences[t % licences.len()];
                    barrier.wait();
                    let take = Take {
                        licence_id: id.clone(),
                        instance_id: "pc".into(),
                        plan: domain::licensing::Plan::Basic,
                        day,
                        now: chrono::Utc::now().naive_utc(),
                        access_checked: access_checked(t),
                    };
                    let outcome = usage::take(db, take).await;
                    taken.push((id.clone(), day, outcome.map_err(|e| e.to_string())));
                }
                taken
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|handle| handle.join().expect("thread"))
        .collect()
}

/// The quota's statement, on as many connections as a busy replica has: many licences take
/// their first unit of a day at the same moment (the day's row does not exist yet), several
/// requests per licence at once, some with access checked by the caller and some by the
/// statement. None of them may fail (a deadlock between two first requests would answer 503),
/// and each licence ends with exactly the units that were answered as taken.
#[test]
fn first_units_of_a_day_taken_at_once_never_deadlock() {
    let db = testkit::mariadb::TestMariaDb::migrated(licence_server::db::migrate);
    let mut setup = db.connect();
    // Four requests per licence and round, all taken: Basic's quota is ten.
    let licences: Vec<licence_server::repo::LicenceId> = (0..4)
        .map(|_| {
            let id = insert_licence(&mut setup, "basic", "active").id;
            seat(&mut setup, id.as_str(), "pc");
            id
        })
        .collect();
    // Sixteen workers, four rounds; half of them with access checked by the caller.
    let outcomes = take_in_rounds(db.url(), licences, 16, 4, |t| t % 2 == 0);
    let mut per_day = std::collections::BTreeMap::<
        (licence_server::repo::LicenceId, chrono::NaiveDate),
        Vec<u32>,
    >::new();
    for (id, day, outcome) in outcomes {
        let (taken, used) = outcome
            .expect("a consumption failed")
            .expect("the guard holds");
        assert!(taken, "within the quota");
        per_day.entry((id, day)).or_default().push(used);
    }
    for ((_, _), mut counts) in per_day {
        counts.sort_unstable();
        assert_eq!(
            counts,
            vec![1, 2, 3, 4],
            "each unit answered once, in order"
        );
    }
}

/// Sixteen requests of one installation at once, on four days' first requests, against Basic's
/// quota of ten: none may fail, ten are taken each day in order, the rest are refused at the
/// limit.
#[test]
fn units_taken_at_once_keep_the_quota() {
    let db = testkit::mariadb::TestMariaDb::migrated(licence_server::db::migrate);
    let mut setup = db.connect();
    let licence = insert_licence(&mut setup, "basic", "active");
    seat(&mut setup, licence.id.as_str(), "pc");
    const THREADS: usize = 16;
    const ROUNDS: usize = 4;
    const LIMIT: u32 = 10;
    let outcomes = take_in_rounds(db.url(), vec![licence.id], THREADS, ROUNDS, |_| false);
    let mut per_day = std::collections::BTreeMap::<chrono::NaiveDate, Vec<u32>>::new();
    for (_, day, found) in outcomes {
        let taken = found.expect("a consumption failed");
        let (taken, used) = taken.expect("an active Basic licence passes the guard");
        if taken {
            per_day.entry(day).or_default().push(used);
        } else {
            assert_eq!(used, LIMIT, "refused only at the limit");
        }
    }
    assert_eq!(per_day.len(), ROUNDS);
    for (_, mut counts) in per_day {
        counts.sort_unstable();
        assert_eq!(
            counts,
            (1..=LIMIT).collect::<Vec<u32>>(),
            "each unit answered once"
        );
    }
}

/// validate and consume answer through the worker's connections; when those are lost, a
/// request answers 503 until a new connection serves it, and every unit a consumption reported
/// taken is counted exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_connections_loses_no_unit() {
    let app = spawn_app().await;
    let key = app.licence("premium", "active");
    let token = app.token(&key, "pc").await;
    for _ in 0..3 {
        let (s, b) = app.validate_by_token(&token).await;
        assert_eq!(s, 200, "{b}");
        let (s, b, _) = consume(&app, &token).await;
        assert_eq!(s, 200, "{b}");
    }

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
        let (s, b) = app.validate_by_token(&token).await;
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

/// Takes units 1 to `n` with `token`, each answered with its count and with `field` = `value`.
async fn consume_units(app: &TestApp, token: &str, n: u32, field: &str, value: Value) {
    for used in 1..=n {
        let (s, b, _) = consume(app, token).await;
        assert_eq!(
            (s, &b["used"], &b[field]),
            (200, &json!(used), &value),
            "{b}"
        );
    }
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
    consume_units(&app, &token, 10, "plan", json!("basic")).await;
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
    consume_units(&app, &token, 12, "limit", json!(150)).await;
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
/// day's count, as a deadlock or a lock wait that timed out would) took no effect: the
/// consumption answers 503 like any database failure, and the next one takes its unit once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_refused_by_the_database_answers_503_and_takes_nothing() {
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
    let (s, b, _) = consume(&app, &token).await;
    assert_error(s, &b, 503, "DATABASE_UNAVAILABLE");
    let refused: i32 = diesel::sql_query("SELECT refused FROM refuse_once")
        .load::<Refused>(&mut conn)
        .expect("flag")[0]
        .refused;
    assert_eq!(refused, 1, "the statement was refused");
    let (s, b, _) = consume(&app, &token).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "{b}");
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "one unit: {b}");
}

#[derive(diesel::QueryableByName)]
struct Refused {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    refused: i32,
}

/// Two replicas take units of one licence at once: the
/// quota holds across them, each unit is answered once, and every refusal reports the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_consuming_at_once_take_exactly_the_quota() {
    let app = spawn_app_at(utc("2026-06-10T08:00:00Z")).await;
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    let replicas = [app.base.clone(), app.start_instance_with(&[]).await];
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
        .metric("db_requests_together_total{kind=\"consume\"}")
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
        app.metric("db_requests_together_total{kind=\"consume\"}")
            .await
            > together,
        "some consumptions were sent together"
    );
}

/// A `DATABASE_URL` as libmariadb reads it, naming the host `localhost` (its Unix socket) and
/// an `ssl_mode` MariaDB accepts without TLS: the service starts on it, and validate and consume
/// answer through the same door as on any other URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_and_consume_answer_on_a_localhost_url_with_options() {
    let app = spawn_app().await;
    let mut url = url::Url::parse(app.db.url()).expect("database URL");
    url.set_host(Some("localhost")).expect("host");
    url.set_query(Some("ssl_mode=disabled"));
    let replica = app
        .start_instance_with(&[("DATABASE_URL", url.as_str())])
        .await;
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    let (s, b) = post_at(&app, &replica, "/api/license/validate", Some(&token)).await;
    assert_eq!((s, &b["valid"]), (200, &json!(true)), "{b}");
    let (s, b, _) = consume_at(&app.client, &replica, &token).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "{b}");
    let (s, b) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!((s, &b["used"]), (200, &json!(1)), "the same database: {b}");
}

async fn post_at(app: &TestApp, base: &str, path: &str, bearer: Option<&str>) -> (u16, Value) {
    let mut req = app
        .client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body("{}");
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.expect("POST");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}
