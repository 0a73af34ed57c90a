//! Weights and water.

use chrono::{Duration, Utc};
use serde_json::json;

use crate::helpers::spawn_app;

fn rome_today() -> chrono::NaiveDate {
    domain::rome::local_date(Utc::now())
}

#[tokio::test]
async fn weights_keep_one_per_day_with_a_trend_a_goal_and_a_bmi() {
    let app = spawn_app().await;
    let u = app.user("weights@example.com");
    let today = rome_today();
    let day = |n: i64| (today - Duration::days(n)).to_string();

    let r = app
        .post("/me/weights", &u, json!({"kg": 81.0, "measuredOn": day(9)}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(
            "/me/weights",
            &u,
            json!({"kg": 80.5, "measuredOn": day(2), "note": "mattina"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["kg"], 80.5);
    assert_eq!(r.body["note"], "mattina");
    // The same day again replaces it.
    let r = app
        .post("/me/weights", &u, json!({"kg": 80.1, "measuredOn": day(2)}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let today_weight = app.post("/me/weights", &u, json!({"kg": 79.9})).await;
    assert_eq!(today_weight.status, 201, "{}", today_weight.text);
    assert_eq!(today_weight.body["measuredOn"], today.to_string());
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.weight WHERE user_id = '{}'",
            u.id
        )),
        3
    );

    let r = app
        .patch(
            "/me/preferences",
            &u,
            json!({"weightGoalKg": 75.0, "heightCm": 180}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["weightGoalKg"], 75.0);

    let r = app.get(&format!("/me/weights?from={}", day(3)), &u).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "oldest first, in the range: {}", r.text);
    assert_eq!(items[0]["kg"], 80.1);
    // Day -2 averages days -8..-2 (81.0 is 9 days back: outside); today averages -6..0.
    assert_eq!(
        r.body["trend"],
        json!([{"date": day(2), "kg": 80.1}, {"date": day(0), "kg": 80.0}])
    );
    assert_eq!(r.body["goalKg"], 75.0);
    assert_eq!(r.body["heightCm"], 180);
    assert_eq!(r.body["bmi"], 24.7); // 79.9 / 1.8²

    let id = today_weight.body["id"].as_str().expect("id");
    let r = app.delete(&format!("/me/weights/{id}"), &u).await;
    assert_eq!(r.status, 204);
    let r = app.delete(&format!("/me/weights/{id}"), &u).await;
    r.assert_code(404, "NOT_FOUND");
}

#[tokio::test]
async fn weights_out_of_bounds_change_nothing() {
    let app = spawn_app().await;
    let u = app.user("weights-bounds@example.com");
    let tomorrow = (rome_today() + Duration::days(1)).to_string();
    for body in [
        json!({"kg": 19.9}),
        json!({"kg": 400.1}),
        json!({"kg": 72.35}),
        json!({"kg": "72"}),
        json!({"kg": 72.0, "measuredOn": tomorrow}),
        json!({"kg": 72.0, "note": "x".repeat(501)}),
        json!({"kg": 72.0, "extra": 1}),
    ] {
        let r = app.post("/me/weights", &u, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
    }
    for body in [
        json!({"weightGoalKg": 10}),
        json!({"heightCm": 99}),
        json!({"waterGoalMl": 499}),
        json!({"locale": "fr"}),
    ] {
        let r = app.patch("/me/preferences", &u, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
    }
    assert_eq!(app.count("SELECT count(*) AS n FROM nutrition.weight"), 0);
    // Another user's weight is not there to delete.
    let other = app.user("weights-other@example.com");
    let r = app.post("/me/weights", &other, json!({"kg": 60.0})).await;
    let id = r.body["id"].as_str().expect("id").to_owned();
    let r = app.delete(&format!("/me/weights/{id}"), &u).await;
    r.assert_code(404, "NOT_FOUND");
}

#[tokio::test]
async fn water_counts_to_the_goal_and_stops_at_fifty_a_day_under_parallel_taps() {
    let app = spawn_app().await;
    let u = app.user("water@example.com");
    let r = app.get("/me/water", &u).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["totalMl"], 0);
    assert_eq!(r.body["goalMl"], 2000);
    assert_eq!(r.body["date"], rome_today().to_string());

    let r = app.post("/me/water", &u, json!({"ml": 250})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let first = r.body["id"].as_str().expect("id").to_owned();
    for ml in [49, 2001] {
        let r = app.post("/me/water", &u, json!({ "ml": ml })).await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    let r = app
        .patch("/me/preferences", &u, json!({"waterGoalMl": 2500}))
        .await;
    assert_eq!(r.body["waterGoalMl"], 2500);

    let taps = (0..60).map(|_| app.post("/me/water", &u, json!({"ml": 100})));
    let answers = futures_util::future::join_all(taps).await;
    let added = answers.iter().filter(|r| r.status == 201).count();
    assert_eq!(added, 49, "50 a day in all");
    for r in answers.iter().filter(|r| r.status != 201) {
        r.assert_code(422, "DAILY_LIMIT_REACHED");
    }
    let r = app
        .get(&format!("/me/water?date={}", rome_today()), &u)
        .await;
    assert_eq!(r.body["totalMl"], 250 + 49 * 100);
    assert_eq!(r.body["goalMl"], 2500);
    assert_eq!(r.body["items"].as_array().expect("items").len(), 50);

    let r = app.delete(&format!("/me/water/{first}"), &u).await;
    assert_eq!(r.status, 204);
    let r = app.get("/me/water", &u).await;
    assert_eq!(r.body["totalMl"], 49 * 100);
    let r = app.get("/me/water?date=2026-02-30", &u).await;
    r.assert_code(400, "VALIDATION_ERROR");
}

#[tokio::test]
async fn preferences_carry_the_language_and_the_long_fast_acknowledgement() {
    let app = spawn_app().await;
    let u = app.user("prefs@example.com");
    let r = app.get("/me/preferences", &u).await;
    assert_eq!(r.body["locale"], "it");
    assert_eq!(r.body["longFastAcknowledged"], false);
    assert_eq!(r.body["weightGoalKg"], serde_json::Value::Null);
    let r = app
        .patch(
            "/me/preferences",
            &u,
            json!({"locale": "en", "longFastAcknowledged": true, "weightGoalKg": 70.5}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let me = app.get("/me", &u).await;
    assert_eq!(me.body["user"]["preferences"]["locale"], "en");
    assert_eq!(me.body["user"]["preferences"]["longFastAcknowledged"], true);
    assert_eq!(me.body["user"]["preferences"]["weightGoalKg"], 70.5);
    assert_eq!(me.body["user"]["preferences"]["waterGoalMl"], 2000);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM auth.\"user\" WHERE id = '{}' AND locale = 'en'",
            u.id
        )),
        1
    );
    let r = app
        .patch("/me/preferences", &u, json!({"weightGoalKg": null}))
        .await;
    assert_eq!(r.body["weightGoalKg"], serde_json::Value::Null);
    assert_eq!(r.body["locale"], "en");
}
