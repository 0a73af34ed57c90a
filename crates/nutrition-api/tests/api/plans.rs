//! Meal plans, consumption and the auto-start of a fast by the final meal; the recipe catalogue.

use chrono::{Duration, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, User, spawn_app};

fn today() -> String {
    domain::rome::local_date(Utc::now()).to_string()
}

fn tomorrow() -> String {
    (domain::rome::local_date(Utc::now()) + Duration::days(1)).to_string()
}

/// Creates a plan with one day of the given categories; returns (plan, slot ids).
async fn plan(
    app: &TestApp,
    u: &User,
    intermittent: bool,
    categories: &[&str],
) -> (Value, Vec<String>) {
    let slots: Vec<Value> = categories
        .iter()
        .map(|c| json!({ "category": c, "title": format!("pasto {c}") }))
        .collect();
    let r = app
        .post("/me/meal-plans", u, json!({ "intermittentFasting": intermittent, "days": [{ "date": today(), "slots": slots }] }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let ids = r.body["days"][0]["slots"]
        .as_array()
        .expect("slots")
        .iter()
        .map(|s| s["id"].as_str().expect("id").to_owned())
        .collect();
    (r.body, ids)
}

async fn consume(app: &TestApp, u: &User, slot: &str) -> Value {
    let r = app
        .call(
            Method::POST,
            &format!("/me/meal-plans/slots/{slot}/consumed"),
            Some(u),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn running_fasts(app: &TestApp, u: &User) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM nutrition.fast_event WHERE user_id = '{}' AND status = 'IN_PROGRESS'",
        u.id
    ))
}

#[tokio::test]
async fn create_read_and_today() {
    let app = spawn_app().await;
    let u = app.user("plan@example.com");
    let recipe_id = app.get("/me/recipes?category=CENA", &u).await.body["recipes"][0]["id"]
        .as_str()
        .expect("recipe")
        .to_owned();
    let r = app
        .post(
            "/me/meal-plans",
            &u,
            json!({ "intermittentFasting": false, "days": [
                { "date": tomorrow(), "slots": [{ "category": "COL" }] },
                { "date": today(), "slots": [{ "category": "PRA", "title": "Insalata" }, { "category": "CENA", "recipeId": recipe_id }] }
            ] }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let plan = r.body.clone();
    assert_eq!(plan["intermittentFasting"], false);
    let days = plan["days"].as_array().expect("days");
    assert_eq!(days.len(), 2);
    assert_eq!(days[0]["date"], today(), "days in date order");
    let slot = &days[0]["slots"][1];
    for field in [
        "id",
        "date",
        "category",
        "recipe",
        "title",
        "consumed",
        "consumedAt",
    ] {
        assert!(slot.get(field).is_some(), "{field}: {slot}");
    }
    assert_eq!(slot["recipe"]["id"], json!(recipe_id));
    assert_eq!(slot["consumed"], false);
    assert_eq!(days[0]["slots"][0]["title"], "Insalata");

    let id = plan["id"].as_str().expect("id");
    assert_eq!(
        app.get(&format!("/me/meal-plans/{id}"), &u).await.body,
        plan
    );
    let t = app.get("/me/meal-plans/today", &u).await.body;
    assert_eq!(t["date"], today());
    assert_eq!(t["planId"], plan["id"]);
    assert_eq!(t["slots"].as_array().map(Vec::len), Some(2));

    let other = app.user("plan2@example.com");
    assert_eq!(
        app.get(&format!("/me/meal-plans/{id}"), &other)
            .await
            .status,
        404
    );
    assert_eq!(
        app.get("/me/meal-plans/today", &other).await.body["slots"],
        json!([])
    );
    let slot_id = slot["id"].as_str().expect("slot");
    let r = app
        .call(
            Method::POST,
            &format!("/me/meal-plans/slots/{slot_id}/consumed"),
            Some(&other),
            None,
        )
        .await;
    assert_eq!(r.status, 404, "another user's slot");
    let r = app
        .delete(&format!("/me/meal-plans/slots/{slot_id}/consumed"), &other)
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn invalid_plans_are_400_and_write_nothing() {
    let app = spawn_app().await;
    let u = app.user("bad@example.com");
    for body in [
        json!({ "intermittentFasting": false, "days": [] }),
        json!({ "days": [{ "date": today(), "slots": [{ "category": "BRUNCH" }] }] }),
        json!({ "days": [{ "date": "2026-13-01", "slots": [] }] }),
        json!({ "days": [{ "date": today(), "slots": [] }, { "date": today(), "slots": [] }] }),
        json!({ "days": [{ "date": today(), "slots": [{ "category": "COL", "recipeId": "no-such-recipe" }] }] }),
        json!({ "days": [{ "date": today(), "slots": [{ "category": "COL", "title": "x".repeat(201) }] }] }),
        json!({ "days": [{ "date": today(), "slots": [{ "category": "COL", "calories": 3 }] }] }),
        json!({ "intermittentFasting": "yes", "days": [] }),
    ] {
        let r = app.post("/me/meal-plans", &u, body.clone()).await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.meal_plan"),
        0
    );
}

#[tokio::test]
async fn dinner_starts_a_fast_with_the_preferred_protocol_once() {
    let app = spawn_app().await;
    let u = app.user("dinner@example.com");
    let (_, slots) = plan(&app, &u, false, &["COL", "PRA", "CENA"]).await;

    // No preference: nothing starts.
    let r = consume(&app, &u, &slots[2]).await;
    assert_eq!(r["autoStartedFast"], Value::Null);
    assert_eq!(r["slot"]["consumed"], true);
    assert!(r["slot"]["consumedAt"].is_string());
    app.delete(&format!("/me/meal-plans/slots/{}/consumed", slots[2]), &u)
        .await;

    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "18:6" }))
        .await;
    // Not the final meal: nothing starts.
    assert_eq!(
        consume(&app, &u, &slots[1]).await["autoStartedFast"],
        Value::Null
    );
    let r = consume(&app, &u, &slots[2]).await;
    let fast_id = r["autoStartedFast"]["id"]
        .as_str()
        .expect("a fast started")
        .to_owned();
    let fast = app
        .get(&format!("/me/fast-events/{fast_id}"), &u)
        .await
        .body;
    assert_eq!(
        (
            fast["protocol"].as_str(),
            fast["autoStarted"].as_bool(),
            fast["status"].as_str()
        ),
        (Some("18:6"), Some(true), Some("IN_PROGRESS"))
    );

    // Consuming again is harmless.
    let again = consume(&app, &u, &slots[2]).await;
    assert_eq!(again["autoStartedFast"], Value::Null);
    assert_eq!(
        again["slot"]["consumedAt"], r["slot"]["consumedAt"],
        "the first time stays"
    );
    assert_eq!(running_fasts(&app, &u), 1);

    // Un-consuming after ten minutes leaves the fast running; consuming again while it runs
    // starts nothing.
    app.sql(&format!(
        "UPDATE nutrition.meal_slot SET consumed_at = consumed_at - interval '11 minutes' WHERE id = '{}'",
        slots[2]
    ));
    app.sql(&format!(
        "UPDATE nutrition.fast_event SET started_at = started_at - interval '11 minutes' WHERE id = '{fast_id}'"
    ));
    let un = unconsume(&app, &u, &slots[2]).await;
    assert_eq!(un["slot"]["consumed"].as_bool(), Some(false));
    assert_eq!(un["removedFast"], Value::Null);
    assert_eq!(
        consume(&app, &u, &slots[2]).await["autoStartedFast"],
        Value::Null
    );
    assert_eq!(running_fasts(&app, &u), 1);
}

async fn unconsume(app: &TestApp, u: &User, slot: &str) -> Value {
    let r = app
        .delete(&format!("/me/meal-plans/slots/{slot}/consumed"), u)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// A dinner marked by mistake is taken back whole: un-consuming it within ten minutes also
/// removes the fast it started, while that fast still runs.
#[tokio::test]
async fn unconsuming_the_dinner_within_ten_minutes_removes_the_fast_it_started() {
    let app = spawn_app().await;
    let u = app.user("undo-dinner@example.com");
    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    let (_, slots) = plan(&app, &u, false, &["COL", "PRA", "CENA"]).await;
    let started = consume(&app, &u, &slots[2]).await;
    let fast_id = started["autoStartedFast"]["id"]
        .as_str()
        .expect("a fast started")
        .to_owned();

    let un = unconsume(&app, &u, &slots[2]).await;
    assert_eq!(un["slot"]["consumed"].as_bool(), Some(false));
    assert_eq!(un["removedFast"]["id"].as_str(), Some(fast_id.as_str()));
    assert_eq!(running_fasts(&app, &u), 0);
    assert_eq!(
        app.get(&format!("/me/fast-events/{fast_id}"), &u)
            .await
            .status,
        404
    );
    // Un-consuming again removes nothing more.
    assert_eq!(
        unconsume(&app, &u, &slots[2]).await["removedFast"],
        Value::Null
    );

    // A fast the person already ended stays: it is history now.
    let again = consume(&app, &u, &slots[2]).await;
    let second = again["autoStartedFast"]["id"]
        .as_str()
        .expect("a new fast")
        .to_owned();
    let end = app
        .post(&format!("/me/fast-events/{second}/end"), &u, json!({}))
        .await;
    assert_eq!(end.status, 200, "{}", end.text);
    assert_eq!(
        unconsume(&app, &u, &slots[2]).await["removedFast"],
        Value::Null
    );
    assert_eq!(
        app.get(&format!("/me/fast-events/{second}"), &u)
            .await
            .status,
        200
    );

    // A fast started by hand is never taken for the dinner's.
    let manual = app
        .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
        .await;
    assert_eq!(manual.status, 201, "{}", manual.text);
    assert_eq!(
        consume(&app, &u, &slots[2]).await["autoStartedFast"],
        Value::Null
    );
    assert_eq!(
        unconsume(&app, &u, &slots[2]).await["removedFast"],
        Value::Null
    );
    assert_eq!(running_fasts(&app, &u), 1);
}

#[tokio::test]
async fn in_an_intermittent_plan_the_last_meal_of_the_day_is_final() {
    let app = spawn_app().await;
    let u = app.user("if@example.com");
    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    let (_, slots) = plan(&app, &u, true, &["PRA", "SPU"]).await;
    assert_eq!(
        consume(&app, &u, &slots[0]).await["autoStartedFast"],
        Value::Null
    );
    assert!(consume(&app, &u, &slots[1]).await["autoStartedFast"]["id"].is_string());

    // The same day shape in a plain plan: a snack is not dinner.
    let v = app.user("plain@example.com");
    app.patch("/me/preferences", &v, json!({ "fastingProtocol": "16:8" }))
        .await;
    let (_, slots) = plan(&app, &v, false, &["PRA", "SPU"]).await;
    assert_eq!(
        consume(&app, &v, &slots[1]).await["autoStartedFast"],
        Value::Null
    );
    assert_eq!(running_fasts(&app, &v), 0);
}

#[tokio::test]
async fn a_running_fast_is_not_replaced() {
    let app = spawn_app().await;
    let u = app.user("running@example.com");
    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    let manual = app
        .post("/me/fast-events", &u, json!({ "protocol": "20:4" }))
        .await
        .body;
    let (_, slots) = plan(&app, &u, false, &["CENA"]).await;
    assert_eq!(
        consume(&app, &u, &slots[0]).await["autoStartedFast"],
        Value::Null
    );
    assert_eq!(
        app.get("/me/fast-events/current", &u).await.body["id"],
        manual["id"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_final_meals_start_one_fast() {
    let app = spawn_app().await;
    let u = app.user("parallel@example.com");
    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    let (_, first) = plan(&app, &u, false, &["CENA"]).await;
    let (_, second) = plan(&app, &u, false, &["CENA"]).await;
    let (a, b) = tokio::join!(consume(&app, &u, &first[0]), consume(&app, &u, &second[0]));
    let started = [a, b]
        .iter()
        .filter(|r| r["autoStartedFast"]["id"].is_string())
        .count();
    assert_eq!(started, 1);
    assert_eq!(running_fasts(&app, &u), 1);
}

#[tokio::test]
async fn recipes_by_category_and_id() {
    let app = spawn_app().await;
    let u = app.user("r@example.com");
    let all = app.get("/me/recipes", &u).await.body["recipes"]
        .as_array()
        .cloned()
        .expect("recipes");
    assert!(all.len() >= 60, "{}", all.len());
    for category in ["COLAZIONE", "PRANZO", "SPUNTINO", "CENA"] {
        let list = app
            .get(&format!("/me/recipes?category={category}"), &u)
            .await
            .body["recipes"]
            .as_array()
            .cloned()
            .expect("recipes");
        assert!(list.len() >= 10, "{category}");
        assert!(list.iter().all(|r| r["category"] == category));
    }
    let first = &all[0];
    for field in [
        "id",
        "name",
        "category",
        "kcal",
        "prepMinutes",
        "proteinG",
        "carbsG",
        "fatG",
        "fibreG",
        "sugarsG",
        "tags",
        "ingredients",
    ] {
        assert!(first.get(field).is_some(), "{field}: {first}");
    }
    let id = first["id"].as_str().expect("id");
    assert_eq!(&app.get(&format!("/me/recipes/{id}"), &u).await.body, first);
    assert_eq!(app.get("/me/recipes/no-such-recipe", &u).await.status, 404);
    assert_eq!(app.get("/me/recipes?category=BRUNCH", &u).await.status, 400);
    let anonymous = app.call(Method::GET, "/me/recipes", None, None).await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn the_largest_plan_fits_and_a_larger_body_is_413() {
    let app = spawn_app().await;
    let u = app.user("big@example.com");
    let start = domain::rome::local_date(Utc::now());
    let days: Vec<Value> = (0..62)
        .map(|d| {
            let slots: Vec<Value> = ["COL", "PRA", "SPU", "CENA", "COL", "PRA", "SPU", "CENA"]
                .iter()
                .map(|c| json!({ "category": c, "title": "t".repeat(200) }))
                .collect();
            json!({ "date": (start + Duration::days(d)).to_string(), "slots": slots })
        })
        .collect();
    let r = app
        .post(
            "/me/meal-plans",
            &u,
            json!({ "intermittentFasting": false, "days": days }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", &r.text[..r.text.len().min(300)]);
    let huge = format!("{{\"days\":[],\"pad\":\"{}\"}}", "x".repeat(300 * 1024));
    let r = app.raw(Method::POST, "/me/meal-plans", &u, &huge).await;
    r.assert_code(413, "PAYLOAD_TOO_LARGE");
}
