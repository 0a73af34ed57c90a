//! The web app in a real Chromium (playwright-core driving Debian's chromium), through nginx on
//! the real stack: sign-up, a fast with its diary, history, stats, settings, the plan starting a
//! fast, the pause, the not-found page, offline use and sign-out; and Web Push from the app's
//! subscription through push-scheduler to the service worker's notification; and one test per
//! promise of the web app (`web/tests/cases.mjs`: push that answers, offline state, kept drafts,
//! undo, settings that save, layout, numbers, pages); and what keeps people using it
//! (`web/tests/tracking.mjs`: weights, water, corrected, past and imported fasts, the safety
//! notice, English, offline writes sent once). The browser steps
//! are in `web/tests/*.mjs`; these tests start the stack and run them with `node`.

mod common;

use std::process::Command;
use std::time::Duration;

use chrono::{NaiveTime, Utc};
use domain::locale::Locale;
use domain::notifications::{self, Kind};
use testkit::push_service::FakePushService;
use testkit::stack::{ScratchDir, bin};

use common::{run_node, start_stack, start_stack_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_uses_the_web_app_in_chromium() {
    let stack = start_stack().await;
    let base = stack.base();
    let result = tokio::task::spawn_blocking(move || run_node("e2e.mjs", &base, &[]))
        .await
        .expect("join");
    match result {
        Ok(out) => assert!(out.contains("e2e: all steps passed"), "{out}"),
        Err(out) => panic!(
            "{out}\n--- auth ---\n{}\n--- nutrition-api ---\n{}",
            stack.auth.log(),
            stack.nutrition.log()
        ),
    }
}

/// `push-scheduler vapid-keys`: a fresh key pair, as `(public, private)`.
fn vapid_keys() -> (String, String) {
    let out = Command::new(bin("push-scheduler"))
        .arg("vapid-keys")
        .output()
        .expect("push-scheduler vapid-keys");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    (value("VAPID_PUBLIC_KEY"), value("VAPID_PRIVATE_KEY"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lunch_reminder_reaches_the_service_worker_of_the_subscribed_app() {
    lunch_reminder_in(Locale::It).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_switched_to_english_gets_the_pushes_in_english() {
    lunch_reminder_in(Locale::En).await;
}

/// A person turns meal reminders and push on in the app (after switching it to `locale`), gets
/// the test push and tomorrow's lunch reminder in that language, and the service worker shows
/// them and opens their pages.
async fn lunch_reminder_in(locale: Locale) {
    let push = FakePushService::start().await;
    let (public, private) = vapid_keys();
    let env = [
        ("VAPID_PUBLIC_KEY", public.as_str()),
        ("VAPID_PRIVATE_KEY", private.as_str()),
        ("VAPID_SUBJECT", "mailto:ops@example.com"),
        ("PUSH_ALLOW_HTTP_ENDPOINTS", "true"),
    ];
    let stack = start_stack_with(&env).await;
    let base = stack.base();
    // The subscription accepts only messages signed with the key the app subscribed with.
    let sub = push.subscribe_restricted(&public);
    let profile = ScratchDir::new("chromium-profile");
    let profile_dir = profile.path().to_string_lossy().into_owned();

    let (b, p, s) = (base.clone(), profile_dir.clone(), sub.clone());
    let registered = tokio::task::spawn_blocking(move || {
        run_node(
            "push.mjs",
            &b,
            &[
                ("PHASE", "register"),
                ("LANG_CHOSEN", locale.as_str()),
                ("PROFILE", p.as_str()),
                ("FAKE_ENDPOINT", s.endpoint.as_str()),
                ("FAKE_P256DH", s.p256dh.as_str()),
                ("FAKE_AUTH", s.auth.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    if let Err(out) = registered {
        panic!("{out}\n--- nutrition-api ---\n{}", stack.nutrition.log());
    }
    let test_push = push.received(&sub);
    assert_eq!(test_push.len(), 1, "the test push from /settings");
    assert_eq!(test_push[0].json()["kind"], "test");
    assert_eq!(
        test_push[0].json()["title"],
        notifications::payload(Kind::Test, locale).title
    );

    // Tomorrow's lunch at 13:00 Rome, as the external cron would fire it: a slot that the stack's
    // own push-scheduler, serving in real time, cannot have claimed first, whatever the hour.
    let tomorrow = domain::rome::local_date(Utc::now()) + chrono::Days::new(1);
    let at = domain::rome::instant_of(
        tomorrow.and_time(NaiveTime::from_hms_opt(13, 0, 0).expect("13:00")),
    );
    let out = Command::new(bin("push-scheduler"))
        .args([
            "fire",
            "meal-lunch",
            "--at",
            &at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ])
        .env_clear()
        .env("DATABASE_URL", stack.pg.url())
        .envs(env)
        .output()
        .expect("push-scheduler fire");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let received = push.wait_for_received(2, Duration::from_secs(20)).await;
    let lunch = received
        .iter()
        .map(|d| d.json())
        .find(|j| j["kind"] == "meal_lunch")
        .unwrap_or_else(|| panic!("no lunch reminder among {received:?}"));
    assert_eq!(
        lunch,
        serde_json::to_value(notifications::payload(Kind::MealLunch, locale)).expect("json")
    );

    let payload = lunch.to_string();
    let weigh_in =
        serde_json::to_string(&notifications::payload(Kind::WeeklyWeighIn, locale)).expect("json");
    let shown = tokio::task::spawn_blocking(move || {
        run_node(
            "push.mjs",
            &base,
            &[
                ("PHASE", "deliver"),
                ("LANG_CHOSEN", locale.as_str()),
                ("PROFILE", profile_dir.as_str()),
                ("PAYLOAD", payload.as_str()),
                ("WEIGH_IN", weigh_in.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    match shown {
        Ok(out) => assert!(out.contains("push deliver: passed"), "{out}"),
        Err(out) => panic!("{out}"),
    }
}

/// Not a check: writes docs/screenshots/ from the real stack
/// (`cargo nextest run -p e2e --test web --run-ignored only screenshots`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/screenshots/; run on purpose"]
async fn screenshots() {
    let stack = start_stack().await;
    let base = stack.base();
    let out = tokio::task::spawn_blocking(move || run_node("screenshots.mjs", &base, &[]))
        .await
        .expect("join");
    if let Err(out) = out {
        panic!("{out}");
    }
}

/// Not part of the timed suite: Lighthouse scores of /, /plan, /weight and /stats (docs/web-app.md lists them)
/// (`cargo nextest run -p e2e --test web --run-ignored only lighthouse`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow; needs the lighthouse CLI; run on purpose"]
async fn lighthouse() {
    let stack = start_stack().await;
    let base = stack.base();
    let out = tokio::task::spawn_blocking(move || run_node("lighthouse.mjs", &base, &[]))
        .await
        .expect("join");
    match out {
        Ok(out) => println!("{out}"),
        Err(out) => panic!("{out}"),
    }
}

/// Runs one case of `web/tests/cases.mjs` on a fresh stack (with push configured when `push`).
async fn web_case(case: &'static str, push: bool) {
    let keys = push.then(vapid_keys);
    let env: Vec<(&str, &str)> = match &keys {
        Some((public, private)) => vec![
            ("VAPID_PUBLIC_KEY", public.as_str()),
            ("VAPID_PRIVATE_KEY", private.as_str()),
            ("VAPID_SUBJECT", "mailto:ops@example.com"),
        ],
        None => vec![],
    };
    let stack = start_stack_with(&env).await;
    let base = stack.base();
    let result =
        tokio::task::spawn_blocking(move || run_node("cases.mjs", &base, &[("CASE", case)]))
            .await
            .expect("join");
    match result {
        Ok(out) => {
            println!("{out}");
            assert!(out.contains(&format!("case {case}: passed")), "{out}");
        }
        Err(out) => panic!(
            "{out}\n--- auth ---\n{}\n--- nutrition-api ---\n{}",
            stack.auth.log(),
            stack.nutrition.log()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_push_on_answers_within_15_seconds_without_a_push_service() {
    web_case("push-unreachable", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_shows_the_current_state_and_nothing_of_another_person() {
    web_case("offline", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_typed_when_the_session_ends_is_offered_again_after_sign_in() {
    web_case("lost-session", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_fast_can_be_undone_for_ten_seconds() {
    web_case("undo-end", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undoing_the_dinner_removes_the_fast_it_started() {
    web_case("dinner-undo", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_apply_as_they_are_changed() {
    web_case("settings-autosave", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skip_link_moves_the_focus_to_the_content() {
    web_case("skip-link", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_is_wider_than_a_320_px_screen() {
    web_case("narrow", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_charts_say_why_they_are_empty() {
    web_case("empty-charts", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_show_a_decimal_comma() {
    web_case("decimal-comma", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weight_page_is_a_page_of_the_app() {
    web_case("weight", false).await;
}

/// Runs one case of `web/tests/tracking.mjs` on a fresh stack.
async fn tracking_case(case: &'static str) {
    let stack = start_stack().await;
    let base = stack.base();
    let result =
        tokio::task::spawn_blocking(move || run_node("tracking.mjs", &base, &[("CASE", case)]))
            .await
            .expect("join");
    match result {
        Ok(out) => {
            println!("{out}");
            assert!(out.contains(&format!("tracking {case}: passed")), "{out}");
        }
        Err(out) => panic!(
            "{out}\n--- auth ---\n{}\n--- nutrition-api ---\n{}",
            stack.auth.log(),
            stack.nutrition.log()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weight_recorded_shows_in_the_trend_with_the_goal_and_bmi() {
    tracking_case("weight").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn water_is_added_with_one_tap_and_undone() {
    tracking_case("water").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrected_start_changes_the_statistics_and_the_streak() {
    tracking_case("correct-fast").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_past_fast_is_added_and_an_overlapping_one_refused() {
    tracking_case("past-fast").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_export_is_imported_once_with_a_report() {
    tracking_case("import-zero").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_long_fast_waits_for_the_safety_notice_once() {
    tracking_case("safety").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn english_switches_every_screen_at_once() {
    tracking_case("english").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_started_and_ended_offline_is_one_fast_once_online() {
    tracking_case("offline-queue").await;
}
