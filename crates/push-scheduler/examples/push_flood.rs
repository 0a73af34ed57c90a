//! The outbox drain under a tarpit flood: `bench/push-flood/run` builds and runs this.
//!
//! `push_flood [--real N] [--tarpits M] [--rounds R]` (defaults 10,000, 200, 2) drains, in this
//! process and with the senders `serve` would have for a pool of 10, an outbox of one message per
//! device, on a fresh migrated database (from `TEST_POSTGRES_URL`), in alternating rounds:
//! `baseline` (N devices on a local endpoint that answers 201 at once) and `flood` (the same N
//! plus M devices on a local listener that accepts connections and never answers, each on a
//! host name of its own, `t<i>.tarpit.localhost`, resolved to that listener by the sender). The
//! delivery rate of a round is N divided by the time until the last of the N real messages is
//! committed as delivered. Prints one JSON line per round and one summary line. Loopback only;
//! every round is bounded by the send time-out (10 s) after its deliveries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use push_scheduler::deliver::{Counters, Lanes, Shutdown, drain_due};
use service_kit::{Env, Secret};
use testkit::postgres::TestPostgres;
use testkit::push_service::{FakePushService, Tarpit};

/// Senders of `serve` with the default pool of 10.
const WORKERS: usize = 6;
const POOL: u32 = 10;
/// The longest one round may take before it counts as failed.
const ROUND_LIMIT: Duration = Duration::from_secs(120);

fn main() -> anyhow::Result<()> {
    let mut real = 10_000usize;
    let mut tarpits = 200usize;
    let mut rounds = 2usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value: usize = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?
            .parse()?;
        match flag.as_str() {
            "--real" => real = value.clamp(1, 100_000),
            "--tarpits" => tarpits = value.clamp(1, 1000),
            "--rounds" => rounds = value.clamp(1, 10),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(bench(real, tarpits, rounds))
}

struct Round {
    rate: f64,
    seconds: f64,
}

async fn bench(real: usize, tarpits: usize, rounds: usize) -> anyhow::Result<()> {
    let receiver = FakePushService::start().await;
    let tarpit = Tarpit::start().await;
    let names: Vec<String> = (0..tarpits)
        .map(|i| format!("t{i}.tarpit.localhost"))
        .collect();
    let pair = push::VapidKeyPair::generate();
    let vapid = push::VapidConfig::from_env(&Env::from_pairs([
        ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
        ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
        ("VAPID_SUBJECT", "mailto:bench@example.com"),
    ]))?
    .ok_or_else(|| anyhow::anyhow!("no VAPID keys"))?;
    let (mut baseline, mut flood) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for with_tarpits in [false, true] {
            let n_tarpits = if with_tarpits { tarpits } else { 0 };
            // The allow rule is opened for the run: every endpoint is on loopback.
            let sender = push::Sender::with_options(
                vapid.clone(),
                push::SenderOptions {
                    policy: push::EndpointPolicy::allow_http(),
                    resolve: names.iter().map(|n| (n.clone(), tarpit.addr())).collect(),
                    ..push::SenderOptions::default()
                },
            )?;
            let before = tarpit.connections();
            let r = run_round(&receiver, &tarpit, &names, sender, real, n_tarpits).await?;
            let line = serde_json::json!({
                "round": round + 1,
                "scenario": if with_tarpits { "flood" } else { "baseline" },
                "real": real,
                "tarpits": n_tarpits,
                "seconds": (r.seconds * 1000.0).round() / 1000.0,
                "deliveredPerSecond": r.rate.round(),
                "tarpitConnections": tarpit.connections() - before,
            });
            println!("{line}");
            if with_tarpits {
                flood.push(r.rate);
            } else {
                baseline.push(r.rate);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (b, f) = (median(&mut baseline), median(&mut flood));
    println!(
        "{}",
        serde_json::json!({
            "summary": true,
            "real": real,
            "tarpits": tarpits,
            "rounds": rounds,
            "baselinePerSecond": b.round(),
            "floodPerSecond": f.round(),
            "ratio": (f / b * 1000.0).round() / 1000.0,
        })
    );
    Ok(())
}

async fn run_round(
    receiver: &FakePushService,
    tarpit: &Tarpit,
    names: &[String],
    sender: push::Sender,
    real: usize,
    tarpits: usize,
) -> anyhow::Result<Round> {
    let db = TestPostgres::migrated(pg_store::migrate);
    let plain = receiver.plain_endpoint();
    let keys = receiver.subscribe();
    let mut endpoints: Vec<String> = (0..real).map(|i| format!("{plain}?d={i}")).collect();
    endpoints.extend((0..tarpits).map(|i| tarpit.endpoint(&names[i], &i.to_string())));
    seed(&db, &endpoints, &keys.p256dh, &keys.auth)?;
    let pool = pg_store::pool(&Secret::new(db.url()), POOL);
    let lanes = Arc::new(Lanes::new(WORKERS));
    let counters = Arc::new(Counters::default());
    let shutdown = Arc::new(Shutdown::default());
    let started = Instant::now();
    let task = {
        let (pool, lanes, counters, shutdown) = (
            pool.clone(),
            Arc::clone(&lanes),
            Arc::clone(&counters),
            Arc::clone(&shutdown),
        );
        tokio::spawn(async move {
            drain_due(&pool, &sender, WORKERS, &lanes, &counters, &shutdown).await
        })
    };
    let real = i64::try_from(real)?;
    let mut watch = db.connect();
    let seconds = loop {
        let delivered = count(
            &mut watch,
            "SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'delivered'",
        )?;
        if delivered >= real {
            break started.elapsed().as_secs_f64();
        }
        anyhow::ensure!(
            started.elapsed() < ROUND_LIMIT,
            "round not delivered in time"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    // The tarpits' sends end at their time-out; the drain settles them before it returns.
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(60), task).await???;
    let not_delivered = count(
        &mut watch,
        "SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'delivered' AND endpoint LIKE '%/tarpit/%'",
    )?;
    anyhow::ensure!(not_delivered == 0, "a tarpit message counted as delivered");
    Ok(Round {
        rate: real as f64 / seconds,
        seconds,
    })
}

/// One user, profile and device per endpoint, and one message queued for each, in random order.
fn seed(db: &TestPostgres, endpoints: &[String], p256dh: &str, auth: &str) -> anyhow::Result<()> {
    let mut conn = db.connect();
    let values = |row: &dyn Fn(usize, &String) -> String| -> String {
        endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| row(i, e))
            .collect::<Vec<_>>()
            .join(",")
    };
    for chunk_sql in [
        format!(
            "INSERT INTO auth.\"user\" (id, name, email) VALUES {}",
            values(&|i, _| format!("('u{i}', 'B', 'u{i}@example.com')"))
        ),
        format!(
            "INSERT INTO nutrition.profile (user_id, meal_reminders, weekly_weigh_in, fasting_milestones) VALUES {}",
            values(&|i, _| format!("('u{i}', false, false, false)"))
        ),
        format!(
            "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth) VALUES {}",
            values(&|i, e| format!("('d{i}', 'u{i}', 'web', '{e}', '{p256dh}', '{auth}')"))
        ),
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
         SELECT 'meal-lunch', TIMESTAMP '2026-01-05 13:00', d.user_id, d.id, d.endpoint, d.p256dh, d.auth,
                '{\"kind\": \"meal_lunch\", \"tag\": \"meal_lunch\", \"title\": \"Pranzo\", \"body\": \"È ora di pranzo\", \"url\": \"/plan\"}'::jsonb,
                now() + INTERVAL '1 hour'
           FROM nutrition.device_token d ORDER BY random()"
            .to_owned(),
    ] {
        diesel::sql_query(chunk_sql).execute(&mut conn)?;
    }
    diesel::sql_query("ANALYZE").execute(&mut conn)?;
    Ok(())
}

fn count(conn: &mut diesel::PgConnection, query: &str) -> anyhow::Result<i64> {
    #[derive(diesel::QueryableByName)]
    struct C {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    Ok(diesel::sql_query(query).get_result::<C>(conn)?.n)
}
