//! `GET /me`: what it returns, what it costs in statements, and how it treats old, expired and
//! unknown sessions and a database connection that goes away.

use serde_json::json;

use crate::helpers::{User, spawn_app, spawn_counting};

/// The hottest signed-in route reads the session, its user and the profile in one statement:
/// counted on the wire between the service and Postgres, a steady `GET /me` (session neither
/// expired nor due for its refresh) sends exactly one statement, and no liveness ping either.
#[tokio::test]
async fn a_signed_in_get_me_is_one_statement() {
    let app = spawn_counting().await;
    let u = app.user("one@example.com");
    let r = app
        .patch(
            "/me/preferences",
            &u,
            json!({ "fastingProtocol": "16:8", "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The first calls of each worker open its connections and prepare the statement.
    warm_every_worker(&app, &u).await;
    let rounds = 10;
    let before = app.proxy.statements();
    for _ in 0..rounds {
        let r = app.get("/me", &u).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["user"]["email"], "one@example.com", "{}", r.text);
        assert_eq!(
            r.body["user"]["preferences"],
            json!({ "fastingProtocol": "16:8", "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false })
        );
        assert!(r.header("set-cookie").is_none(), "nothing to refresh");
    }
    let sent = app.proxy.statements() - before;
    assert_eq!(sent, rounds, "statements for {rounds} GET /me");
}

/// A user who never saved a preference has no profile row: defaults, not a 404 or 500.
#[tokio::test]
async fn get_me_without_a_profile_row_has_the_defaults() {
    let app = spawn_app().await;
    let u = app.user("fresh@example.com");
    let r = app.get("/me", &u).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["id"], u.id.as_str());
    assert_eq!(
        r.body["user"]["fastingPausedUntil"],
        serde_json::Value::Null
    );
    assert_eq!(
        r.body["user"]["preferences"],
        json!({ "fastingProtocol": null, "fastingMilestones": false, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false })
    );
    assert!(r.body["session"]["expiresAt"].is_string(), "{}", r.text);
    assert!(
        r.body["session"].get("token").is_none(),
        "the token stays secret"
    );
}

/// A session last refreshed over a day ago is extended and its cookie sent again, once; an expired
/// one is deleted and answered 401; so are a missing, a forged and an unknown cookie.
#[tokio::test]
async fn get_me_refreshes_old_sessions_and_refuses_expired_ones() {
    let app = spawn_app().await;
    let u = app.user("old@example.com");
    app.sql(&format!(
        "UPDATE auth.session SET updated_at = now() - interval '25 hours',
                expires_at = now() + interval '1 day' WHERE user_id = '{}'",
        u.id
    ));
    let r = app.get("/me", &u).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let set = r
        .header("set-cookie")
        .expect("the refreshed cookie")
        .to_owned();
    assert!(set.contains("Max-Age=604800"), "{set}");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM auth.session WHERE user_id = '{}'
               AND expires_at > now() + interval '6 days' AND updated_at > now() - interval '1 minute'",
            u.id
        )),
        1,
        "extended to seven days from now"
    );
    let r = app.get("/me", &u).await;
    assert_eq!(r.status, 200);
    assert!(r.header("set-cookie").is_none(), "refreshed once");

    app.sql(&format!(
        "UPDATE auth.session SET expires_at = now() - interval '1 second' WHERE user_id = '{}'",
        u.id
    ));
    let r = app.get("/me", &u).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.body["code"], "UNAUTHORIZED", "{}", r.text);
    assert!(r.body["message"].is_string());
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM auth.session WHERE user_id = '{}'",
            u.id
        )),
        0,
        "the expired session is deleted"
    );

    let other = app.user("other@example.com");
    let (name, value) = other.cookie.split_once('=').expect("name=value");
    let forged = User {
        id: other.id.clone(),
        cookie: format!("{name}=x{value}"),
    };
    let unknown = User {
        id: other.id.clone(),
        cookie: app.cookie_for_token("no-such-session-token-0123456789"),
    };
    for (who, label) in [(&forged, "forged"), (&unknown, "unknown")] {
        let r = app.get("/me", who).await;
        assert_eq!(r.status, 401, "{label}: {}", r.text);
        assert_eq!(r.body["code"], "UNAUTHORIZED", "{label}: {}", r.text);
    }
    let r = app.call(reqwest::Method::GET, "/me", None, None).await;
    r.assert_code(401, "UNAUTHORIZED");
    assert_eq!(app.get("/me", &other).await.status, 200);
}

/// Without a ping on every checkout, a pooled connection whose socket was closed under it is only
/// found out by the statement that fails on it: that request is answered 503 (not 500), the
/// connection is thrown away, and once the database is reachable again every request succeeds,
/// although the pool was full of connections from before the cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_lost_under_the_pool_are_replaced() {
    let app = spawn_app().await;
    let u = app.user("cut@example.com");
    // Several requests at once, so that the pool holds several connections.
    let warm = futures_util::future::join_all((0..8).map(|_| app.get("/me", &u))).await;
    assert!(warm.iter().all(|r| r.status == 200));

    app.proxy.cut();
    let r = app.get("/me", &u).await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.body["code"], "SERVICE_UNAVAILABLE", "{}", r.text);
    app.proxy.restore();

    for round in 0..10 {
        let r = app.get("/me", &u).await;
        assert_eq!(
            r.status, 200,
            "request {round} after the database came back: {}",
            r.text
        );
    }
    let after = futures_util::future::join_all((0..8).map(|_| app.get("/me", &u))).await;
    for r in after {
        assert_eq!(r.status, 200, "{}", r.text);
    }
}

/// Sends `GET /me` on several connections at once, a few times over, so that every worker has
/// opened its connections and prepared the statement.
async fn warm_every_worker(app: &crate::helpers::TestApp, u: &User) {
    for _ in 0..3 {
        let clients: Vec<_> = (0..8).map(|_| testkit::http::client()).collect();
        let answers = futures_util::future::join_all(clients.iter().map(|http| async move {
            http.get(format!("{}/me", app.base))
                .header("cookie", &u.cookie)
                .send()
                .await
                .map(|r| r.status().as_u16())
        }))
        .await;
        assert!(answers.iter().all(|s| matches!(s, Ok(200))), "{answers:?}");
    }
}

/// Twenty rounds of `GET` on each of `paths`: every answer is 200 or 503 (never 500), and the
/// last ten are 200.
async fn recovers(app: &crate::helpers::TestApp, u: &User, paths: &[&str]) {
    let mut statuses = Vec::new();
    for _ in 0..20 {
        for path in paths {
            let r = app.get(path, u).await;
            assert!(
                r.status == 200 || (r.status == 503 && r.body["code"] == "SERVICE_UNAVAILABLE"),
                "{path}: {} {}",
                r.status,
                r.text
            );
            statuses.push(r.status);
        }
    }
    assert!(
        statuses[statuses.len() - 10..].iter().all(|s| *s == 200),
        "{statuses:?}"
    );
}

/// A connection that the database closes (a restart, an administrator, a failover) is replaced:
/// a request that meets it is answered 503 at worst, never 500, and the next ones succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_database_closes_are_replaced() {
    let app = spawn_app().await;
    let u = app.user("lost@example.com");
    warm_every_worker(&app, &u).await;

    let killed = app.count(
        "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND backend_type = 'client backend'",
    );
    assert!(killed >= 1, "{killed}");
    recovers(&app, &u, &["/me"]).await;
    warm_every_worker(&app, &u).await;
}

/// A column whose type changes under the running service (a migration applied by a newer
/// replica) makes the statements that connections prepared before fail ("cached plan must not
/// change result type"). No request may answer 500 for it: a request that meets it is answered
/// 503, its connection is replaced, and soon every request succeeds again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_type_changed_under_prepared_statements_costs_no_500() {
    let app = spawn_app().await;
    let u = app.user("retype@example.com");
    let r = app
        .patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Prepared on every worker's connections.
    let warm = futures_util::future::join_all(
        (0..8).map(|i| app.get(if i % 2 == 0 { "/me" } else { "/me/preferences" }, &u)),
    )
    .await;
    assert!(warm.iter().all(|r| r.status == 200));
    warm_every_worker(&app, &u).await;

    app.sql("ALTER TABLE nutrition.profile ALTER COLUMN fasting_protocol TYPE varchar(64)");
    recovers(&app, &u, &["/me", "/me/preferences"]).await;
    let r = app.get("/me", &u).await;
    assert_eq!(
        r.body["user"]["preferences"]["fastingProtocol"], "16:8",
        "{}",
        r.text
    );
}
