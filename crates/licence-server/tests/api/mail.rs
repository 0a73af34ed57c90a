//! The licence e-mail sender under hostile input, slow servers and several replicas.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use diesel::RunQueryDsl;
use serde_json::json;

use crate::helpers::{KEY, VARIANT_PRO, order_created, quick_mailer, spawn_app, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_injection_in_the_buyer_name_neither_adds_a_recipient_nor_stops_later_mail() {
    let app = spawn_app().await;
    let mut evil = order_created(7001, VARIANT_PRO, "evil@example.com");
    evil["data"]["attributes"]["user_name"] = json!("Evil\r\nBcc: victim@example.com");
    app.deliver(&evil).await;
    app.deliver(&order_created(7002, VARIANT_PRO, "next@example.com"))
        .await;

    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    let recipients: Vec<&str> = mails
        .iter()
        .flat_map(|m| m.rcpt_to.iter().map(String::as_str))
        .collect();
    assert!(
        recipients.contains(&"next@example.com"),
        "the next buyer's mail arrives: {recipients:?}"
    );
    assert!(
        recipients.contains(&"evil@example.com"),
        "the buyer still gets the key: {recipients:?}"
    );
    assert!(
        !recipients.contains(&"victim@example.com"),
        "{recipients:?}"
    );
    for mail in &mails {
        let head = mail.data.split("\r\n\r\n").next().unwrap_or("");
        assert!(
            !head
                .lines()
                .any(|l| l.to_ascii_lowercase().starts_with("bcc:")),
            "{head}"
        );
        assert!(mail.header("bcc").is_none(), "{head}");
    }
}

/// Queues `n` mails in one statement, as if `n` purchases had just committed.
fn queue_mails(app: &crate::helpers::TestApp, n: usize) {
    let values: Vec<String> = (0..n)
        .map(|i| format!("('slow{i}@example.com', 'Subject {i}', 'text {i}', '<p>html {i}</p>')"))
        .collect();
    diesel::sql_query(format!(
        "INSERT INTO email_outbox (to_address, subject, text_body, html_body) VALUES {}",
        values.join(", ")
    ))
    .execute(&mut app.conn())
    .expect("queue mails");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_senders_and_a_slow_smtp_server_send_every_mail_exactly_once() {
    // A lease shorter than the time one sender needs for its whole batch.
    let mut options = quick_mailer();
    options.lease = Duration::from_secs(2);
    let app = spawn_app_with(Utc::now(), options.clone()).await;
    app.start_instance_timed(&[], options).await;
    app.smtp.set_data_delay(Duration::from_millis(600));

    queue_mails(&app, 6);
    let mails = app.smtp.wait_for(6, Duration::from_secs(20)).await;
    assert_eq!(mails.len(), 6);
    // Time for a second copy of any of them to arrive.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut per_recipient: HashMap<String, usize> = HashMap::new();
    for mail in app.smtp.messages() {
        for to in mail.rcpt_to {
            *per_recipient.entry(to).or_default() += 1;
        }
    }
    assert_eq!(per_recipient.len(), 6, "{per_recipient:?}");
    assert!(per_recipient.values().all(|n| *n == 1), "{per_recipient:?}");

    #[derive(diesel::QueryableByName)]
    struct Sent {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let sent: Sent =
        diesel::sql_query("SELECT COUNT(*) AS n FROM email_outbox WHERE sent_at IS NOT NULL")
            .get_result(&mut app.conn())
            .expect("count sent");
    assert_eq!(sent.n, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivered_and_set_aside_mail_is_deleted_after_30_days() {
    let app = spawn_app().await;
    let mut conn = app.conn();
    // Old and recent outcomes, and one mail still owed (never purged, however old); not due for
    // an hour so that the sender leaves it alone.
    diesel::sql_query(
        "INSERT INTO email_outbox \
             (to_address, subject, text_body, html_body, sent_at, gave_up_at, next_attempt_at, created_at) VALUES \
         ('old-sent@example.com', 's', 't', 'h', NOW(6) - INTERVAL 31 DAY, NULL, NOW(6), NOW(6) - INTERVAL 40 DAY), \
         ('old-parked@example.com', 's', 't', 'h', NULL, NOW(6) - INTERVAL 31 DAY, NOW(6), NOW(6) - INTERVAL 40 DAY), \
         ('recent-sent@example.com', 's', 't', 'h', NOW(6) - INTERVAL 29 DAY, NULL, NOW(6), NOW(6) - INTERVAL 40 DAY), \
         ('owed@example.com', 's', 't', 'h', NULL, NULL, NOW(6) + INTERVAL 1 HOUR, NOW(6) - INTERVAL 40 DAY)",
    )
    .execute(&mut conn)
    .expect("queue");
    // A fresh instance purges when it starts.
    app.start_instance(&format!("k1:{KEY}")).await;

    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct To {
        #[diesel(sql_type = diesel::sql_types::Varchar)]
        to_address: String,
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let left = loop {
        let left: Vec<To> =
            diesel::sql_query("SELECT to_address FROM email_outbox ORDER BY to_address")
                .load(&mut conn)
                .expect("rows");
        if left.len() == 2 || tokio::time::Instant::now() > deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let left: Vec<String> = left.into_iter().map(|t| t.to_address).collect();
    assert_eq!(left, vec!["owed@example.com", "recent-sent@example.com"]);
    assert!(app.smtp.messages().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_sender_finishes_the_mail_in_flight_and_releases_the_rest() {
    // The first instance's sender never claims anything (the webhook that queues the mails wakes
    // it, and on a loaded machine it could otherwise win them): the second instance sends.
    let mut idle = quick_mailer();
    idle.poll_interval = Duration::from_secs(3600);
    idle.batch = 0;
    let app = spawn_app_with(Utc::now(), idle).await;
    let other = app.build_instance(&[], quick_mailer()).await;
    let sender = other.mailer().clone();
    tokio::spawn(other.run_until_stopped());
    app.smtp.set_data_delay(Duration::from_millis(800));

    queue_mails(&app, 5);
    assert_eq!(app.smtp.wait_for(1, Duration::from_secs(10)).await.len(), 1);
    // SIGTERM does the same as this call.
    sender.stop().await;

    #[derive(diesel::QueryableByName, Debug)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        attempts: i32,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        sent: bool,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        leased: bool,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        due: bool,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT attempts, sent_at IS NOT NULL AS sent, lease_token IS NOT NULL AS leased, \
             next_attempt_at <= NOW(6) AS due FROM email_outbox ORDER BY id",
    )
    .load(&mut app.conn())
    .expect("rows");
    assert_eq!(rows.len(), 5);
    assert!(rows[0].sent && !rows[0].leased, "{rows:?}");
    for row in &rows[1..] {
        assert!(
            !row.sent && !row.leased && row.due && row.attempts == 0,
            "released untried: {rows:?}"
        );
    }
    assert_eq!(app.smtp.messages().len(), 1);
}
