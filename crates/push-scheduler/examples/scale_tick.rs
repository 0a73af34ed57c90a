//! Times one run of a job against the database at `DATABASE_URL`, without delivering anything:
//! what `bench/scale/run` measures on a million users.
//!
//! `scale_tick <job> --at <RFC 3339>` prints one JSON line
//! `{job, slot, seconds, queued, skipped, alreadyRan}`; `seconds` covers the whole run (claim,
//! choosing the recipients, recording milestones, queuing the outbox rows).

use std::process::ExitCode;
use std::time::Instant;

use diesel::{Connection, PgConnection};
use push_scheduler::deliver::Shutdown;
use push_scheduler::jobs::{self, Job};

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("scale_tick: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<serde_json::Value> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (job, at) = match args.as_slice() {
        [job, flag, at] if flag == "--at" => (job, at),
        _ => anyhow::bail!("usage: scale_tick <job> --at <RFC 3339 time>"),
    };
    let job: Job = job.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let at = chrono::DateTime::parse_from_rfc3339(at)?.with_timezone(&chrono::Utc);
    let slot = jobs::due_slot(job, at)
        .ok_or_else(|| anyhow::anyhow!("{} has no slot due at {at}", job.name()))?;
    let url = std::env::var("DATABASE_URL")
        .map_err(|_| anyhow::anyhow!("DATABASE_URL must name the database to run against"))?;
    let mut conn = PgConnection::establish(&url)?;
    let shutdown = Shutdown::default();
    let started = Instant::now();
    let queued = push_scheduler::run::run(&mut conn, job, slot, at, &shutdown)?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "job": job.name(),
        "slot": slot.local.format("%Y-%m-%dT%H:%M:%S").to_string(),
        "seconds": seconds,
        "queued": queued.queued,
        "skipped": queued.skipped,
        "alreadyRan": queued.already_ran,
    }))
}
