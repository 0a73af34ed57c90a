//! The stored licence state, written atomically: a temporary file in the same directory, synced,
//! then renamed over the old one, so a crash leaves either the old state or the new, never half.

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What the client keeps between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// Kept so that the client can validate by key once its token has expired offline.
    pub licence_key: Option<String>,
    pub token: String,
    pub lease: String,
    /// The latest time the client has seen; a clock behind it was set back.
    pub last_seen: DateTime<Utc>,
    pub last_validated_at: DateTime<Utc>,
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

/// Writes `bytes` to `path` through a synced temporary file and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let suffix: u64 = rand::random();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("licence");
    let tmp = dir.join(format!(".{name}.{suffix:016x}.tmp"));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove() {
        let dir = std::env::temp_dir().join(format!("licence-store-{}", rand::random::<u64>()));
        let path = dir.join("licence.json");
        assert_eq!(State::load(&path).expect("load"), None);
        let state = State {
            licence_key: Some("K".into()),
            token: "t".into(),
            lease: "l".into(),
            last_seen: DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
            last_validated_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
        };
        state.save(&path).expect("save");
        assert_eq!(State::load(&path).expect("load"), Some(state.clone()));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 1);
        State::remove(&path).expect("remove");
        State::remove(&path).expect("removing twice is fine");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
