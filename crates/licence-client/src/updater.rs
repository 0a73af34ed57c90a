//! Updates for apps that use no updater framework: the Tauri-style feed of licence-server
//! (contract section 12), `GET /api/updates/tauri/{target}/{arch}/{current_version}` with the
//! licence token, then the download at the signed address of the answer, verified with the
//! minisign public key the app pins when it is built.
//!
//! Nothing of a downloaded file is trusted before its signature: the file is written beside its
//! destination under a temporary name while its BLAKE2b prehash is computed, and only a file whose
//! minisign signature verifies with the pinned key is renamed into place. A feed that offers a
//! version that is not newer than the running one is refused, so that whoever answers for the
//! server cannot push an older (signed, but vulnerable) build back onto a machine.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::store::State;
use crate::{Error, LicenceClient};

/// The longest update file the helper downloads.
pub const MAX_UPDATE_BYTES: u64 = 2 << 30;

/// The minisign public key that signs the app's builds.
#[derive(Clone)]
pub struct UpdateKey(minisign_verify::PublicKey);

impl std::fmt::Debug for UpdateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpdateKey(…)")
    }
}

impl UpdateKey {
    /// The key as `minisign -G` prints it (`RW…`), as its `.pub` file, or as Tauri's
    /// configuration holds it (the `.pub` file in base64).
    pub fn parse(raw: &str) -> Result<Self, Error> {
        let raw = raw.trim();
        minisign_verify::PublicKey::from_base64(raw)
            .or_else(|_| minisign_verify::PublicKey::decode(raw))
            .or_else(|e| {
                let text = STANDARD
                    .decode(raw)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or(e)?;
                minisign_verify::PublicKey::decode(&text)
            })
            .map(Self)
            .map_err(|_| Error::UpdateRefused("the pinned update key is not a minisign public key"))
    }

    /// The key pinned at build time (`UPDATE_PUBLIC_KEY`), if the app was built with one.
    pub fn pinned() -> Option<Self> {
        option_env!("UPDATE_PUBLIC_KEY").and_then(|k| Self::parse(k).ok())
    }
}

/// A newer release the feed offers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Update {
    pub version: String,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub pub_date: Option<String>,
    /// The signed download address.
    pub url: String,
    /// The minisign signature of the file as Tauri's signer writes it (the `.sig` file in
    /// base64).
    pub signature: String,
}

/// The platform names of the feed: Tauri's `{target}` and `{arch}` for this build.
pub fn current_platform() -> (&'static str, &'static str) {
    let target = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86" => "i686",
        "arm" => "armv7",
        other => other,
    };
    (target, arch)
}

/// Whether a feed's path segment is plain: letters, digits, `.`, `-`, `_`, `+`.
fn plain(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= 64
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
}

impl LicenceClient {
    /// Asks the feed whether a release newer than `current_version` is offered to this licence
    /// for this platform: `Ok(None)` when nothing is (204).
    pub async fn check_update(&self, current_version: &str) -> Result<Option<Update>, Error> {
        let (target, arch) = current_platform();
        self.check_update_for(target, arch, current_version, None)
            .await
    }

    /// [`check_update`](Self::check_update) for a given platform and, with `bundle`, one of its
    /// bundles (`appimage`, `deb`, `msi`, `nsis`, …).
    pub async fn check_update_for(
        &self,
        target: &str,
        arch: &str,
        current_version: &str,
        bundle: Option<&str>,
    ) -> Result<Option<Update>, Error> {
        let current = semver::Version::parse(current_version.trim_start_matches('v'))
            .map_err(|_| Error::UpdateRefused("the running version is not a semantic version"))?;
        if ![target, arch, current_version].into_iter().all(plain) || !bundle.is_none_or(plain) {
            return Err(Error::UpdateRefused("a platform name the feed cannot take"));
        }
        let ask = async |token: &str| {
            let mut req = self
                .http
                .get(format!(
                    "{}/api/updates/tauri/{target}/{arch}/{current_version}",
                    self.base
                ))
                .bearer_auth(token);
            if let Some(bundle) = bundle {
                req = req.query(&[("bundle", bundle)]);
            }
            let resp = req.send().await?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = crate::read_limited(resp).await?;
            if status == reqwest::StatusCode::NO_CONTENT {
                return Ok(None);
            }
            if !status.is_success() {
                return Err(crate::server_error(status.as_u16(), &headers, &body));
            }
            Ok(Some(body))
        };
        let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        let body = match ask(&state.token).await {
            // A token that expired while the app ran offline: validation renews it (and, bound
            // to its request, is the one answer that may end the licence).
            Err(Error::Server { status: 401, .. }) => {
                self.validate().await?;
                let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
                ask(&state.token).await?
            }
            other => other?,
        };
        let Some(body) = body else {
            return Ok(None);
        };
        let update: Update = serde_json::from_slice(&body)
            .map_err(|_| Error::UpdateRefused("the feed's answer is not an update"))?;
        let offered = semver::Version::parse(update.version.trim_start_matches('v'))
            .map_err(|_| Error::UpdateRefused("the offered version is not a semantic version"))?;
        if offered <= current {
            return Err(Error::UpdateRefused(
                "the feed offers a version that is not newer than this one",
            ));
        }
        check_download_url(&update.url)
            .map_err(|_| Error::UpdateRefused("the download address is not https"))?;
        Ok(Some(update))
    }

    /// Downloads `update` to `dest` and verifies its minisign signature with `key`. The file is
    /// at `dest` only once it verified; a file that does not is deleted and the answer is
    /// [`Error::UpdateRefused`].
    pub async fn download_update(
        &self,
        update: &Update,
        key: &UpdateKey,
        dest: &Path,
    ) -> Result<PathBuf, Error> {
        check_download_url(&update.url)
            .map_err(|_| Error::UpdateRefused("the download address is not https"))?;
        let signature = decode_signature(&update.signature)?;
        let mut verifier = key
            .0
            .verify_stream(&signature)
            .map_err(|_| Error::UpdateRefused("the signature is not by the pinned update key"))?;
        let dir = dest
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".update-{:016x}.part", rand::random::<u64>()));
        let written = async {
            let mut resp = self.http.get(&update.url).send().await?;
            if !resp.status().is_success() {
                return Err(Error::Server {
                    status: resp.status().as_u16(),
                    code: "DOWNLOAD_FAILED".into(),
                    message: "the update could not be downloaded".into(),
                });
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            let mut size: u64 = 0;
            while let Some(chunk) = resp.chunk().await? {
                size += chunk.len() as u64;
                if size > MAX_UPDATE_BYTES {
                    return Err(Error::UpdateRefused("the update is larger than allowed"));
                }
                verifier.update(&chunk);
                file.write_all(&chunk)?;
            }
            file.sync_all()?;
            verifier.finalize().map_err(|_| {
                Error::UpdateRefused("the update's signature does not verify with the pinned key")
            })?;
            std::fs::rename(&tmp, dest)?;
            Ok(dest.to_path_buf())
        }
        .await;
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// `https://`, or `http://` on the loopback interface, as for the licence server itself.
fn check_download_url(url: &str) -> Result<(), Error> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| Error::ServerUrlRefused("not an absolute http(s) address"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if crate::on_loopback(&parsed) => Ok(()),
        _ => Err(Error::ServerUrlRefused("not https")),
    }
}

/// A signature as Tauri's signer writes it (the `.sig` file in base64), or the file's text.
fn decode_signature(raw: &str) -> Result<minisign_verify::Signature, Error> {
    let raw = raw.trim();
    STANDARD
        .decode(raw)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|text| minisign_verify::Signature::decode(&text).ok())
        .or_else(|| minisign_verify::Signature::decode(raw).ok())
        .ok_or(Error::UpdateRefused(
            "the update's signature is not a minisign signature",
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_segments_are_plain() {
        for ok in [
            "linux",
            "x86_64",
            "1.2.3",
            "1.2.3-beta.1+build.5",
            "appimage",
        ] {
            assert!(plain(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a?b",
            "a b",
            "%2e%2e",
            &"x".repeat(65),
        ] {
            assert!(!plain(bad), "{bad}");
        }
    }

    #[test]
    fn download_addresses_are_https_or_loopback() {
        assert!(check_download_url("https://licences.example.com/api/download?file=a").is_ok());
        assert!(check_download_url("http://127.0.0.1:8083/api/download?file=a").is_ok());
        assert!(check_download_url("http://licences.example.com/api/download").is_err());
        assert!(check_download_url("file:///etc/passwd").is_err());
    }
}
