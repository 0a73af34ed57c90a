//! The sender survives a panic: the message it was handling is parked, the loop restarts, the
//! next mail goes out, and the panic shows in the health the services export and `/ready` reads.
//! The storage here keeps rows in memory and panics while recording one chosen message; the
//! sender and the SMTP server are the real ones.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use mailer::store::Claim;
use mailer::{Mailer, Options, QueuedMail, SmtpSettings, Store};
use service_kit::Secret;
use testkit::smtp::SmtpServer;

#[derive(Clone, Debug)]
struct Row {
    mail: QueuedMail,
    due: DateTime<Utc>,
    token: Option<String>,
    sent: bool,
    parked: Option<String>,
}

#[derive(Clone, Default)]
struct MemoryStore {
    rows: Arc<Mutex<Vec<Row>>>,
    /// Recording this message's delivery panics.
    poison: i64,
}

impl MemoryStore {
    fn with<T>(&self, id: i64, token: &str, f: impl FnOnce(&mut Row) -> T) -> Option<T> {
        let mut rows = self.rows.lock().expect("rows");
        rows.iter_mut()
            .find(|r| r.mail.id == id && r.token.as_deref() == Some(token) && !r.sent)
            .map(f)
    }
}

impl Store for MemoryStore {
    fn claim(&self, claim: &Claim) -> anyhow::Result<Vec<QueuedMail>> {
        let mut rows = self.rows.lock().expect("rows");
        let mut out = Vec::new();
        for row in rows.iter_mut() {
            if !row.sent
                && row.parked.is_none()
                && row.due <= claim.now
                && (out.len() as i64) < claim.limit
            {
                row.token = Some(claim.token.to_owned());
                row.due = claim.until;
                row.mail.attempts += 1;
                out.push(row.mail.clone());
            }
        }
        Ok(out)
    }
    fn renew(&self, id: i64, token: &str, until: DateTime<Utc>) -> anyhow::Result<bool> {
        Ok(self.with(id, token, |r| r.due = until).is_some())
    }
    fn mark_sent(&self, id: i64, token: &str, _at: DateTime<Utc>) -> anyhow::Result<bool> {
        assert_ne!(id, self.poison, "a bug while recording this message");
        Ok(self.with(id, token, |r| r.sent = true).is_some())
    }
    fn reschedule(
        &self,
        id: i64,
        token: &str,
        at: DateTime<Utc>,
        _error: &str,
    ) -> anyhow::Result<bool> {
        Ok(self.with(id, token, |r| r.due = at).is_some())
    }
    fn park(&self, id: i64, token: &str, _at: DateTime<Utc>, reason: &str) -> anyhow::Result<bool> {
        Ok(self
            .with(id, token, |r| r.parked = Some(reason.to_owned()))
            .is_some())
    }
    fn release(&self, id: i64, token: &str, now: DateTime<Utc>) -> anyhow::Result<bool> {
        Ok(self.with(id, token, |r| r.due = now).is_some())
    }
    fn purge(&self, _before: DateTime<Utc>) -> anyhow::Result<usize> {
        Ok(0)
    }
}

fn mail(id: i64) -> Row {
    Row {
        mail: QueuedMail {
            id,
            to_address: format!("m{id}@example.com"),
            to_name: None,
            subject: format!("Mail {id}"),
            text_body: "text".to_owned(),
            html_body: "<p>html</p>".to_owned(),
            attempts: 0,
        },
        due: Utc::now(),
        token: None,
        sent: false,
        parked: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_sender_parks_the_message_restarts_and_delivers_the_rest() {
    let smtp = SmtpServer::start().await.expect("SMTP server");
    let store = MemoryStore {
        rows: Arc::new(Mutex::new(vec![mail(1), mail(2)])),
        poison: 1,
    };
    let settings = SmtpSettings {
        url: Secret::new(smtp.url()),
        from: "App <app@example.com>".parse().expect("from"),
    };
    let options = Options {
        poll_interval: Duration::from_millis(100),
        batch: 1,
        ..Options::default()
    };
    let sender = Mailer::start(store.clone(), &settings, options).expect("start");
    let health = sender.health();

    let got = smtp.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 2, "the mail after the panic goes out too");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !(health.is_up() && store.rows.lock().expect("rows")[1].sent)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(health.panics(), 1);
    assert!(health.is_up(), "running again");
    let rows = store.rows.lock().expect("rows").clone();
    assert_eq!(
        rows[0].parked.as_deref(),
        Some("the sender failed on this message"),
        "{rows:?}"
    );
    assert!(rows[1].sent, "{rows:?}");
    sender.stop().await;
}
