//! Every push in its user's language (`auth.user.locale`), the scheduled ones and the test push.

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::helpers::{Api, Profile, World};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("valid")
        .with_timezone(&Utc)
}

fn english(w: &World, user_id: &str) {
    w.sql(&format!(
        "UPDATE auth.\"user\" SET locale = 'en' WHERE id = '{user_id}'"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weekly_weigh_in_and_milestones_speak_each_users_language() {
    let mut w = World::new().await;
    // As in production: the service's role may read only the id and the language of a user.
    let url = testkit::postgres::as_role(w.db.url(), "push_scheduler_svc");
    for (k, v) in &mut w.env {
        if k == "DATABASE_URL" {
            v.clone_from(&url);
        }
    }
    let en = w.person("en@example.com", Some(Profile::default()));
    english(&w, &en.id);
    let it = w.person("it@example.com", None);

    let r = w.fire("weekly-weigh-in", "2026-11-23T08:00:00Z", 10);
    assert_eq!(r["sent"].as_u64(), Some(2), "{r}");
    let got = w.payloads(&en.device);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["title"], "Weekly weigh-in");
    assert_eq!(
        got[0]["body"],
        "It's Monday: weigh yourself before breakfast and log your weight to follow your progress."
    );
    assert_eq!(got[0]["url"], "/weight");
    assert_eq!(got[0]["kind"], "weekly_weigh_in");
    let got = w.payloads(&it.device);
    assert_eq!(got[0]["title"], "Pesata settimanale");
    assert_eq!(got[0]["url"], "/weight");

    let at = utc("2026-11-23T10:05:00Z");
    w.fast(&en, at - chrono::Duration::minutes(125), 16, &[]);
    w.fast(&it, at - chrono::Duration::minutes(125), 16, &[]);
    w.sql(&format!(
        "INSERT INTO nutrition.profile (user_id, fasting_milestones) VALUES ('{}', true)",
        it.id
    ));
    let r = w.fire("milestones", "2026-11-23T10:05:00Z", 10);
    assert_eq!(r["sent"].as_u64(), Some(2), "{r}");
    let got = w.payloads(&en.device);
    assert_eq!(got[1]["kind"], "hydration_2h");
    assert_eq!(got[1]["title"], "Two hours of fasting");
    assert_eq!(got[1]["url"], "/");
    let got = w.payloads(&it.device);
    assert_eq!(got[1]["title"], "Due ore di digiuno");
    assert_eq!(got[1]["url"], "/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_push_speaks_the_users_language() {
    let w = World::new().await;
    let api = Api::start(&w).await;
    let user = api.user(&w, "en@example.com");
    english(&w, &user.id);
    let device = w.push.subscribe();
    assert_eq!(api.register(&user, &device).await.status, 201);
    let r = api
        .call(Method::POST, "/me/notifications/test", &user, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let got = w.payloads(&device);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["title"], "Notifications are on");
    assert_eq!(got[0]["url"], "/settings");
}
