//! A command-line stand-in for the desktop app:
//!
//! ```text
//! LICENCE_SERVER=http://127.0.0.1:8083 cargo run -p licence-client --example desktop -- activate KEY
//! cargo run -p licence-client --example desktop -- status | consume | activations | deactivate
//! UPDATE_KEY=RW… cargo run -p licence-client --example desktop -- update 1.0.0 ./App.AppImage
//! ```
//!
//! The trusted keys are the ones pinned at build time (`LICENCE_PUBLIC_KEYS`), or, for trying it
//! out, `LICENCE_TRUST_KEYS` (`kid:x,...`) read at run time. The state lives in the OS
//! configuration directory, or at `LICENCE_STATE` when set.

use std::process::ExitCode;

use licence_client::{Error, LicenceClient, UpdateKey};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn client() -> Result<LicenceClient, Error> {
    let base = std::env::var("LICENCE_SERVER").unwrap_or_else(|_| "http://127.0.0.1:8083".into());
    let keys = std::env::var("LICENCE_TRUST_KEYS").ok();
    let state = std::env::var("LICENCE_STATE").ok();
    match (keys, state) {
        (None, None) => LicenceClient::new(&base),
        (keys, state) => {
            let keys = keys.map_or_else(licence_client::pinned_keys, |k| {
                licence_client::parse_keys(&k)
            });
            let dir = std::env::temp_dir().join("licence-client-example");
            let state = state.map_or_else(|| dir.join("licence.json"), Into::into);
            let instance = licence_client::machine_instance_id(&dir)?;
            LicenceClient::with_keys(&base, keys, state, instance)
        }
    }
}

async fn run(args: &[String]) -> Result<(), Error> {
    let client = client()?;
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["activate", key] => {
            let s = client.activate(key, Some("example")).await?;
            println!(
                "activated: {} plan, lease until {}",
                s.plan, s.lease_expires_at
            );
        }
        ["status"] => {
            let s = client.refresh().await?;
            println!(
                "{} plan, features {:?}, {} a day, lease until {}",
                s.plan, s.features, s.daily_quota, s.lease_expires_at
            );
        }
        ["consume"] => {
            let u = client.consume().await?;
            println!("{}/{} used, resets at {}", u.used, u.limit, u.resets_at);
        }
        ["activations"] => {
            for a in client.activations().await? {
                let mark = if a.current { "*" } else { " " };
                println!("{mark} {} {}", a.instance_id, a.name.unwrap_or_default());
            }
        }
        ["deactivate"] => client.deactivate(None).await?,
        ["deactivate", other] => client.deactivate(Some(other)).await?,
        ["update", current, dest] => match client.check_update(current).await? {
            None => println!("{current} is the newest release offered"),
            Some(update) => {
                // The key pinned at build time, or for trying it out UPDATE_KEY at run time.
                let key = match std::env::var("UPDATE_KEY") {
                    Ok(raw) => Some(UpdateKey::parse(&raw)?),
                    Err(_) => UpdateKey::pinned(),
                };
                let Some(key) = key else {
                    eprintln!("{} is offered; no update key to verify it", update.version);
                    return Ok(());
                };
                let path = client
                    .download_update(&update, &key, std::path::Path::new(dest))
                    .await?;
                println!("{} verified at {}", update.version, path.display());
            }
        },
        _ => eprintln!(
            "usage: desktop activate KEY | status | consume | activations | deactivate [INSTANCE] \
             | update CURRENT_VERSION DEST"
        ),
    }
    Ok(())
}
