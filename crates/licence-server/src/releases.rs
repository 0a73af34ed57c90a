//! The release manifest, `BUILDS_DIR/latest.json`, and the files it names.
//!
//! The manifest is read on every request (it is small, and replacing it is how a release is
//! published: no restart). `size` and `sha256` of each file are added by the server and cached
//! per file by (length, modification time), so a 200 MB build is hashed once, not per request.
//! Only names that are a single, ordinary path component are ever served; the file must also
//! resolve (symbolic links followed) to a place inside `BUILDS_DIR`.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::Context;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub const MANIFEST: &str = "latest.json";

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub version: String,
    pub pub_date: Option<String>,
    pub notes: Option<String>,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ManifestFile {
    pub platform: String,
    pub name: String,
}

/// A file of the manifest as it is on disk.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub path: PathBuf,
    pub size: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: Option<SystemTime>,
}

/// Builds directory with its hash cache, shared by all workers.
#[derive(Debug, Clone)]
pub struct Builds {
    dir: PathBuf,
    cache: Arc<Mutex<HashMap<String, (Stamp, String)>>>,
    /// Held while a file is hashed: requests arriving on a cold cache wait for the one hashing
    /// and then find its digest, instead of each reading the whole build again.
    hashing: Arc<Mutex<()>>,
    hashed: Arc<AtomicU64>,
}

impl Builds {
    /// `dir` must be canonical (settings make it so).
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            cache: Arc::default(),
            hashing: Arc::default(),
            hashed: Arc::default(),
        }
    }

    /// How many times a file was hashed since start-up.
    pub fn hashes_computed(&self) -> u64 {
        self.hashed.load(Ordering::Relaxed)
    }

    pub fn manifest(&self) -> anyhow::Result<Manifest> {
        let path = self.dir.join(MANIFEST);
        let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&raw).with_context(|| format!("parsing {}", path.display()))
    }

    /// The file `name`, when the current manifest lists it and it is a regular file inside the
    /// directory; `Ok(None)` otherwise. Blocking: hashes the file when it changed.
    pub fn listed_file(&self, name: &str) -> anyhow::Result<Option<FileInfo>> {
        let manifest = self.manifest()?;
        if !manifest.files.iter().any(|f| f.name == name) {
            return Ok(None);
        }
        self.file(name)
    }

    /// Size and digest of `name` if it is a safe name of a regular file inside the directory.
    pub fn file(&self, name: &str) -> anyhow::Result<Option<FileInfo>> {
        let Some(path) = self.resolve(name) else {
            return Ok(None);
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => return Ok(None),
        };
        let stamp = Stamp {
            size: meta.len(),
            modified: meta.modified().ok(),
        };
        let cached = || {
            self.cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(name)
                .filter(|(s, _)| *s == stamp)
                .map(|(_, digest)| digest.clone())
        };
        let sha256 = match cached() {
            Some(d) => d,
            None => {
                let _single = self.hashing.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(d) = cached() {
                    return Ok(Some(FileInfo {
                        path,
                        size: stamp.size,
                        sha256: d,
                    }));
                }
                let digest = hash_file(&path)?;
                self.hashed.fetch_add(1, Ordering::Relaxed);
                self.cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(name.to_owned(), (stamp.clone(), digest.clone()));
                digest
            }
        };
        Ok(Some(FileInfo {
            path,
            size: stamp.size,
            sha256,
        }))
    }

    /// The canonical path of `name` inside the directory, or `None` for anything that is not a
    /// plain file name or that leads outside (`..`, absolute paths, separators, links out).
    fn resolve(&self, name: &str) -> Option<PathBuf> {
        if !is_plain_name(name) {
            return None;
        }
        let path = self.dir.join(name).canonicalize().ok()?;
        (path.parent() == Some(self.dir.as_path())).then_some(path)
    }
}

/// A single normal path component without separators, control characters or a leading dot.
pub fn is_plain_name(name: &str) -> bool {
    if name.is_empty()
        || name.len() > 255
        || name.starts_with('.')
        || name.contains(['/', '\\', ':'])
        || name.chars().any(char::is_control)
    {
        return false;
    }
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    )
}

fn hash_file(path: &Path) -> anyhow::Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(crate::signing::to_hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names() {
        for ok in ["app.dmg", "App Setup 1.2.exe", "app_1.2-x64.AppImage"] {
            assert!(is_plain_name(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            ".",
            "../etc/passwd",
            "/etc/passwd",
            "a/b",
            "a\\b",
            ".hidden",
            "latest.json\n",
            "C:evil",
        ] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
    }
}
