//! The outbox of auth's mail, delivered by the shared sender to a real SMTP server.

use std::time::Duration;

use auth::repo::outbox;
use auth::{Application, Settings};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::mail_outbox;
use testkit::postgres::TestPostgres;
use testkit::smtp::SmtpServer;

use crate::helpers::env_for;

struct MailApp {
    base: String,
    db: TestPostgres,
    smtp: SmtpServer,
}

fn quick() -> mailer::Options {
    mailer::Options {
        poll_interval: Duration::from_millis(100),
        retry_base: Duration::from_millis(200),
        retry_max: Duration::from_secs(1),
        lease: Duration::from_secs(10),
        smtp_timeout: Duration::from_secs(3),
        ..mailer::Options::default()
    }
}

/// auth with e-mail on, on a fresh database, before anything is queued.
async fn spawn_mail_app(db: TestPostgres) -> MailApp {
    let smtp = SmtpServer::start().await.expect("start SMTP server");
    let extra = [
        ("SMTP_URL".to_owned(), smtp.url()),
        (
            "MAIL_FROM".to_owned(),
            "Nutrizione <no-reply@example.com>".to_owned(),
        ),
    ];
    let settings = Settings::from_env(&env_for(db.url(), &extra)).expect("valid settings");
    let app = Application::build_with(settings, quick())
        .await
        .expect("build auth");
    assert!(app.mailer().is_some());
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    MailApp { base, db, smtp }
}

#[derive(Queryable, Debug)]
struct State {
    sent_at: Option<DateTime<Utc>>,
    parked_at: Option<DateTime<Utc>>,
    text_body: String,
    lease_token: Option<String>,
}

fn state(conn: &mut PgConnection, id: i64) -> State {
    mail_outbox::table
        .find(id)
        .select((
            mail_outbox::sent_at,
            mail_outbox::parked_at,
            mail_outbox::text_body,
            mail_outbox::lease_token,
        ))
        .first(conn)
        .expect("outbox row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_mail_is_delivered_once_and_a_rolled_back_one_never() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let mut conn = db.connect();
    let link = "http://localhost:8080/api/auth/reset-password/tok123?callbackURL=%2Freset";
    let rolled_back: Result<(), diesel::result::Error> = conn.transaction(|c| {
        outbox::enqueue(
            c,
            &auth::mail::password_reset(link, "123456", "Nobody", auth::i18n::Locale::It)
                .to("gone@example.com"),
        )?;
        Err(diesel::result::Error::RollbackTransaction)
    });
    assert!(rolled_back.is_err());
    let id = conn
        .transaction(|c| {
            outbox::enqueue(
                c,
                &auth::mail::password_reset(
                    link,
                    "123456",
                    "Ada\r\nBcc: victim@example.com",
                    auth::i18n::Locale::It,
                )
                .to("ada@example.com"),
            )
        })
        .expect("queue");

    let app = spawn_mail_app(db).await;
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert_eq!(mail.rcpt_to, vec!["ada@example.com".to_owned()]);
    assert_eq!(mail.mail_from, "no-reply@example.com");
    assert_eq!(
        mail.header("subject").as_deref(),
        Some("Reimposta la tua password")
    );
    assert!(mail.header("bcc").is_none(), "{}", mail.data);
    assert!(
        mail.header("content-type")
            .is_some_and(|c| c.contains("multipart/alternative")),
        "{}",
        mail.data
    );
    assert!(mail.data.contains("tok123"), "{}", mail.data);

    let mut conn = app.db.connect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let row = loop {
        let row = state(&mut conn, id);
        if row.sent_at.is_some() || tokio::time::Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(row.sent_at.is_some(), "{row:?}");
    assert!(row.parked_at.is_none());
    assert!(row.lease_token.is_none());
    assert!(row.text_body.is_empty(), "the single-use link is not kept");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(app.smtp.messages().len(), 1, "delivered once");

    let (status, _) = testkit::http::get_json(&format!("{}/ready", app.base)).await;
    assert_eq!(status, 200);
    let metrics = reqwest::get(format!("{}/metrics", app.base))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    for line in [
        "mail_sender_up{outbox=\"mail\"} 1",
        "mail_sender_panics_total{outbox=\"mail\"} 0",
        "mail_deliveries_total{outbox=\"mail\",outcome=\"sent\"} 1",
        "outbox_pending{outbox=\"mail\"} 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_address_is_parked_without_blocking_the_next_mail() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let mut conn = db.connect();
    let bad = outbox::enqueue(
        &mut conn,
        &auth::mail::email_verification("http://x/v", "123456", "A", auth::i18n::Locale::It)
            .to("not an address"),
    )
    .expect("queue");
    outbox::enqueue(
        &mut conn,
        &auth::mail::email_verification("http://x/v", "123456", "B", auth::i18n::Locale::It)
            .to("b@example.com"),
    )
    .expect("queue");
    let app = spawn_mail_app(db).await;
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].rcpt_to, vec!["b@example.com".to_owned()]);
    let mut conn = app.db.connect();
    let row = state(&mut conn, bad);
    assert!(row.parked_at.is_some() && row.sent_at.is_none(), "{row:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivered_and_parked_mail_is_deleted_after_30_days() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let mut conn = db.connect();
    let days = |n: i64| Utc::now() - chrono::Duration::days(n);
    let mut queue = |to: &str| {
        outbox::enqueue(
            &mut conn,
            &auth::mail::email_verification("http://x/v", "123456", "A", auth::i18n::Locale::It)
                .to(to),
        )
        .expect("queue")
    };
    let old_sent = queue("old-sent@example.com");
    let old_parked = queue("old-parked@example.com");
    let recent_sent = queue("recent-sent@example.com");
    let old_pending = queue("old-pending@example.com");
    let mut conn = db.connect();
    let set = |conn: &mut PgConnection,
               id: i64,
               sent: Option<DateTime<Utc>>,
               parked: Option<DateTime<Utc>>| {
        diesel::update(mail_outbox::table.find(id))
            .set((
                mail_outbox::sent_at.eq(sent),
                mail_outbox::parked_at.eq(parked),
                mail_outbox::created_at.eq(days(40)),
            ))
            .execute(conn)
            .expect("age row");
    };
    set(&mut conn, old_sent, Some(days(31)), None);
    set(&mut conn, old_parked, None, Some(days(31)));
    set(&mut conn, recent_sent, Some(days(29)), None);
    // Unsent mail is never purged, however old: it is still owed. Not due for a while.
    set(&mut conn, old_pending, None, None);
    diesel::update(mail_outbox::table.find(old_pending))
        .set(mail_outbox::next_attempt_at.eq(Utc::now() + chrono::Duration::hours(1)))
        .execute(&mut conn)
        .expect("postpone");

    let app = spawn_mail_app(db).await;
    let mut conn = app.db.connect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let left = loop {
        let left: Vec<i64> = mail_outbox::table
            .select(mail_outbox::id)
            .order(mail_outbox::id)
            .load(&mut conn)
            .expect("ids");
        if left.len() == 2 || tokio::time::Instant::now() > deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(left, vec![recent_sent, old_pending]);
    assert!(app.smtp.messages().is_empty());
}
