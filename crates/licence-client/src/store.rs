//! The stored licence state, written atomically: a temporary file in the same directory, synced,
//! then renamed over the old one, so a crash leaves either the old state or the new, never half.
//! The file holds the licence key and a token, so it is created readable by its user only (and
//! the rename replaces whatever mode an older file had). Its times are sealed with a MAC keyed
//! from the lease and the installation, so that moving `lastSeen` back by hand to hide a clock
//! set back makes the state unusable offline instead.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::verify::{constant_time_eq, hmac_sha256};

/// What the client keeps between runs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// Kept so that the client can validate by key once its token has expired offline.
    pub licence_key: Option<String>,
    pub token: String,
    pub lease: String,
    /// The latest time the client has seen; a clock behind it was set back.
    pub last_seen: DateTime<Utc>,
    pub last_validated_at: DateTime<Utc>,
    /// The seal of the fields above ([`State::seal`]); empty in files of older versions, which
    /// are therefore validated online once.
    #[serde(default)]
    pub mac: String,
}

/// The licence key and the token are credentials: never printed.
impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("licence_key", &self.licence_key.as_ref().map(|_| "…"))
            .field("last_seen", &self.last_seen)
            .field("last_validated_at", &self.last_validated_at)
            .finish_non_exhaustive()
    }
}

impl State {
    /// `None` when nothing is stored.
    pub fn load(path: &Path) -> std::io::Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Seals the state for `instance_id`: the MAC covers every field, under a key derived from
    /// the lease and the installation.
    pub fn seal(&mut self, instance_id: &str) {
        self.mac = URL_SAFE_NO_PAD.encode(self.expected_mac(instance_id));
    }

    /// Whether the state is as [`State::seal`] left it for `instance_id`.
    pub fn is_sealed_for(&self, instance_id: &str) -> bool {
        URL_SAFE_NO_PAD
            .decode(&self.mac)
            .is_ok_and(|mac| constant_time_eq(&mac, &self.expected_mac(instance_id)))
    }

    fn expected_mac(&self, instance_id: &str) -> [u8; 32] {
        // Lengths first, so that no two field lists share a message or a key.
        let key = Sha256::new()
            .chain_update(b"licence-client state key v1\0")
            .chain_update((instance_id.len() as u64).to_be_bytes())
            .chain_update(instance_id.as_bytes())
            .chain_update((self.lease.len() as u64).to_be_bytes())
            .chain_update(self.lease.as_bytes())
            .finalize();
        let time = |t: &DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Nanos, true);
        let mut message = Vec::new();
        for field in [
            self.licence_key.as_deref().unwrap_or(""),
            if self.licence_key.is_some() { "1" } else { "0" },
            &self.token,
            &time(&self.last_seen),
            &time(&self.last_validated_at),
        ] {
            message.extend_from_slice(&(field.len() as u64).to_be_bytes());
            message.extend_from_slice(field.as_bytes());
        }
        hmac_sha256(&key, &message)
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_atomically(path, &bytes)
    }

    pub fn remove(path: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` through a synced temporary file and a rename. The file is readable
/// by its user only, and so is a directory created for it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let suffix: u64 = rand::random();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("licence");
    let tmp = dir.join(format!(".{name}.{suffix:016x}.tmp"));
    let written = (|| {
        let mut file = create_private(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A new file that only its user may read or write (on Unix; elsewhere the user's profile
/// directory is already private).
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove() {
        let dir = std::env::temp_dir().join(format!("licence-store-{}", rand::random::<u64>()));
        let path = dir.join("licence.json");
        assert_eq!(State::load(&path).expect("load"), None);
        let mut state = State {
            licence_key: Some("K".into()),
            token: "t".into(),
            lease: "l".into(),
            last_seen: DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
            last_validated_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
            mac: String::new(),
        };
        state.seal("desk");
        state.save(&path).expect("save");
        assert_eq!(State::load(&path).expect("load"), Some(state.clone()));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 1);
        State::remove(&path).expect("remove");
        State::remove(&path).expect("removing twice is fine");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_seal_covers_every_field_and_the_installation() {
        let at = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        let mut state = State {
            licence_key: Some("K".into()),
            token: "t".into(),
            lease: "l".into(),
            last_seen: at(1_800_000_000),
            last_validated_at: at(1_800_000_000),
            mac: String::new(),
        };
        assert!(!state.is_sealed_for("desk"), "an unsealed state");
        state.seal("desk");
        assert!(state.is_sealed_for("desk"));
        assert!(!state.is_sealed_for("laptop"));
        let edits: [fn(&mut State); 6] = [
            |s| s.last_seen -= chrono::Duration::seconds(1),
            |s| s.last_validated_at += chrono::Duration::days(1),
            |s| s.lease.push('x'),
            |s| s.token.push('x'),
            |s| s.licence_key = None,
            |s| s.mac = "garbage!".into(),
        ];
        for edit in edits {
            let mut edited = state.clone();
            edit(&mut edited);
            assert!(!edited.is_sealed_for("desk"), "{edited:?}");
        }
    }
}
