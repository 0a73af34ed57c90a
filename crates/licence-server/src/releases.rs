//! The release manifests, `BUILDS_DIR/latest.json` and `BUILDS_DIR/releases.json`, the files
//! they name, and who is offered which release (contract sections 4 and 12).
//!
//! The manifests are read on every request (they are small, and replacing one is how a release
//! is published: no restart). `size`, `sha256` and `sha512` of each file are added by the server
//! and cached per file by (length, modification time), so a 200 MB build is hashed once, not per
//! request.
//! Only names that are a single, ordinary path component are ever served; the file must also
//! resolve (symbolic links followed) to a place inside `BUILDS_DIR`.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::Context;
use base64::Engine;
use chrono::{DateTime, Utc};
use domain::licensing::Status;
use serde::Deserialize;
use sha2::{Digest, Sha256, Sha512};

use crate::repo::licences::LicenceAccess;

pub const MANIFEST: &str = "latest.json";
/// Every release the updater feeds offer; without it, `latest.json` is the one stable release.
pub const RELEASES: &str = "releases.json";

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
    /// Hex, as `GET /api/latest` and the `ETag` show it.
    pub sha256: String,
    /// Base64, as electron-updater reads it.
    pub sha512: String,
}

#[derive(Debug, Clone)]
struct Digests {
    sha256: String,
    sha512: String,
}

/// The update channel of a licence and of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Stable,
    Beta,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::Beta => "beta",
        }
    }

    /// The column's value; anything the code does not know is read as stable, the channel that
    /// offers least.
    pub fn from_column(value: &str) -> Self {
        if value == "beta" {
            Self::Beta
        } else {
            Self::Stable
        }
    }
}

/// A file of a release in `releases.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFile {
    /// `<os>-<arch>` with an optional `-<bundle>`: `darwin-aarch64`, `linux-x86_64-appimage`.
    pub platform: String,
    pub name: String,
    /// The base64 minisign signature Tauri's signer writes (the `.sig` file's content).
    pub tauri_signature: Option<String>,
    /// Sparkle's base64 Ed25519 signature of the file.
    pub ed_signature: Option<String>,
}

/// One release the updater feeds may offer.
#[derive(Debug, Clone)]
pub struct Release {
    pub version: semver::Version,
    /// `None` only for a `latest.json` without `pubDate`: such a release is never offered to a
    /// licence whose access ended, since nothing shows it came before that end.
    pub pub_date: Option<DateTime<Utc>>,
    pub notes: Option<String>,
    pub channel: Channel,
    pub files: Vec<ReleaseFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReleasesFile {
    releases: Vec<RawRelease>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRelease {
    version: String,
    pub_date: String,
    notes: Option<String>,
    channel: Channel,
    files: Vec<ReleaseFile>,
}

fn parse_version(raw: &str) -> anyhow::Result<semver::Version> {
    semver::Version::parse(raw.trim().trim_start_matches('v'))
        .with_context(|| format!("version {raw:?} is not a semantic version"))
}

fn parse_date(raw: &str) -> anyhow::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|d| d.with_timezone(&Utc))
        .with_context(|| format!("pubDate {raw:?} is not an RFC 3339 time"))
}

impl ReleasesFile {
    fn into_releases(self) -> anyhow::Result<Vec<Release>> {
        self.releases
            .into_iter()
            .map(|r| {
                check_names(r.files.iter().map(|f| f.name.as_str()))?;
                Ok(Release {
                    version: parse_version(&r.version)?,
                    pub_date: Some(parse_date(&r.pub_date)?),
                    notes: r.notes,
                    channel: r.channel,
                    files: r.files,
                })
            })
            .collect()
    }
}

/// A name that could never be served is the operator's mistake: said loudly, not skipped.
fn check_names<'a>(mut names: impl Iterator<Item = &'a str>) -> anyhow::Result<()> {
    match names.find(|n| !is_plain_name(n)) {
        Some(bad) => anyhow::bail!("file name {bad:?} is not a plain file name"),
        None => Ok(()),
    }
}

/// The Sparkle feed of a licence: its token and its whole address, as the licence e-mail and
/// `GET /api/license/activations` show it.
#[derive(Debug, Clone)]
pub struct SparkleFeed {
    pub token: String,
    pub url: String,
}

impl SparkleFeed {
    pub const PATH: &str = "/api/updates/sparkle/";

    pub fn of(base: &url::Url, secret: &[u8], licence_id: &str) -> Self {
        let token = crate::signing::sparkle_feed_token(secret, licence_id);
        let url = format!(
            "{}{}{token}.xml",
            base.as_str().trim_end_matches('/'),
            Self::PATH
        );
        Self { token, url }
    }
}

/// What a licence is offered (contract section 12, "Who gets what"): the one rule behind every
/// updater feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    channel: Channel,
    /// Set when the licence's access ended: only releases published before that instant.
    published_before: Option<DateTime<Utc>>,
}

impl Offer {
    /// `None` when the licence is offered nothing: refunded, switched off, or without access
    /// and without a known end (a paused or unpaid subscription).
    pub fn for_licence(
        licence: &LicenceAccess,
        channel: Channel,
        now: DateTime<Utc>,
    ) -> Option<Self> {
        if licence.has_access(now) {
            return Some(Self {
                channel,
                published_before: None,
            });
        }
        if licence.disabled_at.is_some() || licence.status() == Status::Refunded {
            return None;
        }
        let end = licence.expires_at?.and_utc();
        (end <= now).then_some(Self {
            channel,
            published_before: Some(end),
        })
    }

    pub fn channel(&self) -> Channel {
        self.channel
    }

    pub fn admits(&self, release: &Release) -> bool {
        let channel = release.channel == Channel::Stable || self.channel == Channel::Beta;
        let date = match self.published_before {
            None => true,
            Some(end) => release.pub_date.is_some_and(|d| d < end),
        };
        channel && date
    }

    /// The offered releases among `releases` (newest first, as [`Builds::releases`] sorts them).
    pub fn releases<'a>(&self, releases: &'a [Release]) -> impl Iterator<Item = &'a Release> {
        releases.iter().filter(|r| self.admits(r))
    }
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
    cache: Arc<Mutex<HashMap<String, (Stamp, Digests)>>>,
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

    /// `releases.json`, or `None` when there is none.
    fn releases_file(&self) -> anyhow::Result<Option<ReleasesFile>> {
        let path = self.dir.join(RELEASES);
        let raw = match std::fs::read(&path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        serde_json::from_slice(&raw)
            .map(Some)
            .with_context(|| format!("parsing {}", path.display()))
    }

    /// Every release the updater feeds know, newest version first: `releases.json`, or the one
    /// stable release of `latest.json` when there is no `releases.json`.
    pub fn releases(&self) -> anyhow::Result<Vec<Release>> {
        let mut releases = match self.releases_file()? {
            Some(file) => file
                .into_releases()
                .with_context(|| format!("checking {RELEASES}"))?,
            None => {
                let m = self.manifest()?;
                check_names(m.files.iter().map(|f| f.name.as_str()))?;
                vec![Release {
                    version: parse_version(&m.version)?,
                    pub_date: m.pub_date.as_deref().map(parse_date).transpose()?,
                    notes: m.notes,
                    channel: Channel::Stable,
                    files: m
                        .files
                        .into_iter()
                        .map(|f| ReleaseFile {
                            platform: f.platform,
                            name: f.name,
                            tauri_signature: None,
                            ed_signature: None,
                        })
                        .collect(),
                }]
            }
        };
        releases.sort_by(|a, b| b.version.cmp(&a.version));
        Ok(releases)
    }

    /// Whether `latest.json` or `releases.json` names the file `name`.
    fn lists(&self, name: &str) -> anyhow::Result<bool> {
        if let Some(file) = self.releases_file()?
            && file
                .releases
                .iter()
                .any(|r| r.files.iter().any(|f| f.name == name))
        {
            return Ok(true);
        }
        Ok(self.manifest()?.files.iter().any(|f| f.name == name))
    }

    /// The file `name`, when a manifest lists it and it is a regular file inside the directory;
    /// `Ok(None)` otherwise. Blocking: hashes the file when it changed.
    pub fn listed_file(&self, name: &str) -> anyhow::Result<Option<FileInfo>> {
        if !self.lists(name)? {
            return Ok(None);
        }
        self.file(name)
    }

    /// The blockmap electron-updater asks for next to the listed file `name` (`<name>.blockmap`,
    /// which need not be listed itself): its path, or `None`.
    pub fn listed_blockmap(&self, name: &str) -> anyhow::Result<Option<PathBuf>> {
        if !self.lists(name)? {
            return Ok(None);
        }
        let Some(path) = self.resolve(&format!("{name}.blockmap")) else {
            return Ok(None);
        };
        Ok(std::fs::metadata(&path)
            .is_ok_and(|m| m.is_file())
            .then_some(path))
    }

    /// The size of `name` without hashing it (the feeds that need no digest), or `None` when it
    /// is not a servable file.
    pub fn size(&self, name: &str) -> Option<u64> {
        let path = self.resolve(name)?;
        std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len())
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
        let digests = match cached() {
            Some(d) => d,
            None => {
                let _single = self.hashing.lock().unwrap_or_else(PoisonError::into_inner);
                match cached() {
                    Some(d) => d,
                    None => {
                        let digests = hash_file(&path)?;
                        self.hashed.fetch_add(1, Ordering::Relaxed);
                        self.cache
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(name.to_owned(), (stamp.clone(), digests.clone()));
                        digests
                    }
                }
            }
        };
        Ok(Some(FileInfo {
            path,
            size: stamp.size,
            sha256: digests.sha256,
            sha512: digests.sha512,
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

/// Both digests in one read of the file.
fn hash_file(path: &Path) -> anyhow::Result<Digests> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut sha256 = Sha256::new();
    let mut sha512 = Sha512::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sha256.update(&buf[..n]);
        sha512.update(&buf[..n]);
    }
    Ok(Digests {
        sha256: crate::signing::to_hex(&sha256.finalize()),
        sha512: base64::engine::general_purpose::STANDARD.encode(sha512.finalize()),
    })
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
