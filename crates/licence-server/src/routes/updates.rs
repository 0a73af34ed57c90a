//! The updater feeds of contract section 12: Tauri's dynamic server, electron-updater's generic
//! provider and Sparkle's appcast. Each asks [`Offer`] what its licence is offered and answers
//! with the signed download addresses of section 4.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, SecondsFormat, Utc};
use mailer::message::escape_html as xml_escape;
use serde::{Deserialize, Serialize};

use super::{AppState, authorise_updates, claims};
use crate::error::ApiError;
use crate::releases::{Builds, Channel, Offer, Release, ReleaseFile, SparkleFeed};
use crate::repo::Db;
use crate::signing::{self, DOWNLOAD_VALIDITY};

/// The answer Tauri's updater reads when there is an update (its "dynamic server" format).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = TauriUpdate)]
pub struct TauriAnswer {
    version: String,
    #[schema(required = true)]
    notes: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub_date: Option<String>,
    /// The signed download address (valid 15 minutes).
    url: String,
    /// The base64 minisign signature of the file, as Tauri's signer wrote it.
    signature: String,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TauriQuery {
    /// The bundle the app was installed from (`appimage`, `deb`, `rpm`, `app`, `msi`, `nsis`):
    /// a `<os>-<arch>-<bundle>` file is preferred to the plain `<os>-<arch>` one.
    bundle: Option<String>,
}

/// Tauri's operating system names.
const TAURI_TARGETS: [&str; 3] = ["linux", "windows", "darwin"];
/// Tauri's architecture names.
const TAURI_ARCHES: [&str; 4] = ["x86_64", "i686", "aarch64", "armv7"];

/// `GET /api/updates/tauri/{target}/{arch}/{current_version}`: 204 without an update.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn tauri(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let claims = claims(&state, &req)?;
    let (target, arch, current) = path.into_inner();
    if !TAURI_TARGETS.contains(&target.as_str()) {
        return Err(ApiError::Validation(format!(
            "target: one of {}",
            TAURI_TARGETS.join(", ")
        )));
    }
    if !TAURI_ARCHES.contains(&arch.as_str()) {
        return Err(ApiError::Validation(format!(
            "arch: one of {}",
            TAURI_ARCHES.join(", ")
        )));
    }
    let current = version_field(&current, "current_version")?;
    let query = web::Query::<TauriQuery>::from_query(req.query_string())
        .map_err(|e| ApiError::Validation(format!("query: {e}")))?
        .into_inner();
    let bundle = match query.bundle.as_deref() {
        None | Some("") => None,
        Some(b) if b.len() <= 16 && b.bytes().all(|c| c.is_ascii_alphanumeric()) => {
            Some(b.to_ascii_lowercase())
        }
        Some(_) => {
            return Err(ApiError::Validation(
                "bundle: up to 16 letters and digits".into(),
            ));
        }
    };
    let (_, offer) = authorise_updates(&state, &db, claims).await?;
    let platform = format!("{target}-{arch}");
    let mut wanted: Vec<String> = bundle.iter().map(|b| format!("{platform}-{b}")).collect();
    wanted.push(platform);
    let found = pick(&state, move |builds, releases| {
        offer
            .releases(releases)
            .take_while(|r| r.version > current)
            .find_map(|r| {
                // The first platform name wanted that the release has, signed and on disk.
                wanted.iter().find_map(|p| {
                    r.files
                        .iter()
                        .find(|f| &f.platform == p && f.tauri_signature.is_some())
                        .filter(|f| builds.size(&f.name).is_some())
                        .map(|f| (r.clone(), f.clone()))
                })
            })
    })
    .await?;
    let Some((release, file)) = found else {
        return Ok(HttpResponse::NoContent()
            .insert_header((header::CACHE_CONTROL, "private, no-store"))
            .finish());
    };
    let links = Signer::new(&state);
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(TauriAnswer {
            version: release.version.to_string(),
            notes: release.notes.clone(),
            pub_date: release.pub_date.map(rfc3339),
            url: links.url(&file.name),
            signature: file.tauri_signature.clone().unwrap_or_default(),
        }))
}

/// What the name of an electron-updater channel file asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChannelFile {
    os: &'static str,
    /// Tauri's name of the architecture on Linux; Windows and macOS files carry every one.
    arch: Option<&'static str>,
}

/// `latest.yml` (Windows), `latest-mac.yml`, `latest-linux.yml`, `latest-linux-<arch>.yml`
/// for the other Linux architectures, and their `beta` twins. Both names answer by the
/// licence's channel: an app built as a prerelease asks for `beta*.yml` (electron-builder
/// writes that channel into it), and a licence moved back to stable must still be answered.
fn channel_file(name: &str) -> Option<ChannelFile> {
    let stem = name.strip_suffix(".yml")?;
    let rest = stem
        .strip_prefix("latest")
        .or_else(|| stem.strip_prefix("beta"))?;
    let (os, arch) = match rest {
        "" => ("windows", None),
        "-mac" => ("darwin", None),
        "-linux" => ("linux", Some("x86_64")),
        "-linux-arm64" => ("linux", Some("aarch64")),
        "-linux-armv7l" => ("linux", Some("armv7")),
        "-linux-ia32" => ("linux", Some("i686")),
        _ => return None,
    };
    Some(ChannelFile { os, arch })
}

impl ChannelFile {
    fn has(&self, file: &ReleaseFile) -> bool {
        let Some(rest) = file.platform.strip_prefix(self.os) else {
            return false;
        };
        let Some(rest) = rest.strip_prefix('-') else {
            return false;
        };
        match self.arch {
            None => true,
            Some(arch) => rest == arch || rest.starts_with(&format!("{arch}-")),
        }
    }

    /// Whether electron-updater installs this file on the platform (the `.zip` on macOS, the
    /// AppImage on Linux, the NSIS `.exe` on Windows): it goes first, and `path` names it.
    fn installs(&self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        match self.os {
            "darwin" => lower.ends_with(".zip"),
            "linux" => lower.ends_with(".appimage"),
            _ => lower.ends_with(".exe"),
        }
    }
}

/// `GET /api/updates/electron/{file}.yml`: electron-updater's `UpdateInfo` of the newest
/// release offered for the platform, as YAML.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn electron(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let claims = claims(&state, &req)?;
    let wanted = channel_file(&name).ok_or(ApiError::NotFound)?;
    let (_, offer) = authorise_updates(&state, &db, claims).await?;
    let Some((release, mut files)) = pick(&state, move |_, releases| {
        let release = offer
            .releases(releases)
            .find(|r| r.files.iter().any(|f| wanted.has(f)))?;
        let files: Vec<ReleaseFile> = release
            .files
            .iter()
            .filter(|f| wanted.has(f))
            .cloned()
            .collect();
        Some((release.clone(), files))
    })
    .await?
    else {
        // electron-updater reads a missing channel file as "no update published".
        return Err(ApiError::NotFound);
    };
    files.sort_by_key(|f| !wanted.installs(&f.name));
    let builds = state.builds.clone();
    let infos = web::block(move || {
        files
            .into_iter()
            .map(|f| Ok(builds.file(&f.name)?.map(|info| (f.name, info))))
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::ReleasesUnavailable)?;
    let links = Signer::new(&state);
    let files: Vec<(String, u64, String)> = infos
        .into_iter()
        .flatten()
        .map(|(name, info)| (links.url(&name), info.size, info.sha512))
        .collect();
    let Some(first) = files.first() else {
        tracing::error!(version = %release.version, "release files listed but not servable");
        return Err(ApiError::NotFound);
    };
    let yaml = update_info_yaml(&release, &files, first);
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/yaml; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(yaml))
}

/// electron-builder's `UpdateInfo`. Every scalar is written as a JSON string, which YAML reads
/// as the same string: no version is ever read as a number, no note breaks the document.
fn update_info_yaml(
    release: &Release,
    files: &[(String, u64, String)],
    first: &(String, u64, String),
) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let mut out = format!("version: {}\nfiles:\n", q(&release.version.to_string()));
    for (url, size, sha512) in files {
        out.push_str(&format!(
            "  - url: {}\n    sha512: {}\n    size: {size}\n",
            q(url),
            q(sha512)
        ));
    }
    out.push_str(&format!("path: {}\nsha512: {}\n", q(&first.0), q(&first.2)));
    if let Some(date) = release.pub_date {
        out.push_str(&format!(
            "releaseDate: {}\n",
            q(&date.to_rfc3339_opts(SecondsFormat::Millis, true))
        ));
    }
    if let Some(notes) = &release.notes {
        out.push_str(&format!("releaseNotes: {}\n", q(notes)));
    }
    out
}

/// `GET /api/updates/sparkle/{feed}.xml`: the appcast of the licence the feed token names.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn sparkle(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let token = name
        .strip_suffix(".xml")
        .filter(|t| {
            t.len() == 43
                && t.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        })
        .ok_or(ApiError::NotFound)?;
    let secret = state.settings.download_signing_secret.expose().as_bytes();
    let (licence, channel) = crate::repo::updates::by_feed(&db, token)
        .await?
        .filter(|(l, _)| signing::verify_sparkle_feed(secret, l.id.as_str(), token))
        .ok_or(ApiError::NotFound)?;
    let offer = Offer::for_licence(&licence, channel, state.clock.now())
        .ok_or(ApiError::LicenceInactive)?;
    let offered = pick(&state, move |builds, releases| {
        offer
            .releases(releases)
            .filter_map(|release| {
                release
                    .files
                    .iter()
                    .filter(|f| f.platform.starts_with("darwin-") && f.ed_signature.is_some())
                    .find_map(|f| builds.size(&f.name).map(|len| (f.clone(), len)))
                    .map(|(file, len)| (release.clone(), file, len))
            })
            .collect::<Vec<_>>()
    })
    .await?;
    let links = Signer::new(&state);
    let mut items = String::new();
    for (release, file, length) in &offered {
        items.push_str(&appcast_item(
            release,
            file,
            *length,
            &links.url(&file.name),
        ));
    }
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
         <rss version=\"2.0\" xmlns:sparkle=\"http://www.andymatuschak.org/xml-namespaces/sparkle\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n\
         <channel>\n<title>Updates</title>\n<link>{link}</link>\n\
         <description>The releases offered to this licence</description>\n\
         <language>en</language>\n{items}</channel>\n</rss>\n",
        link = xml_escape(state.settings.public_base_url.as_str()),
    );
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/rss+xml; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(xml))
}

fn appcast_item(release: &Release, file: &ReleaseFile, length: u64, url: &str) -> String {
    let version = xml_escape(&release.version.to_string());
    let mut item = format!("<item>\n<title>Version {version}</title>\n");
    if let Some(date) = release.pub_date {
        item.push_str(&format!("<pubDate>{}</pubDate>\n", date.to_rfc2822()));
    }
    item.push_str(&format!(
        "<sparkle:version>{version}</sparkle:version>\n\
         <sparkle:shortVersionString>{version}</sparkle:shortVersionString>\n"
    ));
    // A stable item carries no channel: apps on the default channel see only such items.
    if release.channel == Channel::Beta {
        item.push_str("<sparkle:channel>beta</sparkle:channel>\n");
    }
    if let Some(notes) = &release.notes {
        item.push_str(&format!(
            // Plain text (Sparkle 2.4 and later): the notes' line breaks stay; older versions
            // read it as HTML, where the escaping keeps the text as written.
            "<description sparkle:format=\"plain-text\">{}</description>\n",
            xml_escape(notes)
        ));
    }
    item.push_str(&format!(
        "<enclosure url=\"{}\" length=\"{length}\" type=\"application/octet-stream\" \
         sparkle:edSignature=\"{}\"/>\n</item>\n",
        xml_escape(url),
        xml_escape(file.ed_signature.as_deref().unwrap_or_default()),
    ));
    item
}

fn rfc3339(date: DateTime<Utc>) -> String {
    date.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn version_field(raw: &str, field: &str) -> Result<semver::Version, ApiError> {
    if raw.len() > 64 {
        return Err(ApiError::Validation(format!(
            "{field}: a semantic version (1.2.3)"
        )));
    }
    semver::Version::parse(raw.trim_start_matches('v'))
        .map_err(|_| ApiError::Validation(format!("{field}: a semantic version (1.2.3)")))
}

/// Runs `choose` on the releases on the blocking pool: reading the manifests and looking at the
/// files on disk are file-system calls, which an actix worker must not wait for.
async fn pick<T: Send + 'static>(
    state: &AppState,
    choose: impl FnOnce(&Builds, &[Release]) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let builds = state.builds.clone();
    web::block(move || builds.releases().map(|releases| choose(&builds, &releases)))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::ReleasesUnavailable)
}

/// Signs the download addresses of one answer, all valid for the same 15 minutes.
struct Signer<'a> {
    base: String,
    secret: &'a [u8],
    expires: i64,
}

impl<'a> Signer<'a> {
    fn new(state: &'a AppState) -> Self {
        Self {
            base: state
                .settings
                .public_base_url
                .as_str()
                .trim_end_matches('/')
                .to_owned(),
            secret: state.settings.download_signing_secret.expose().as_bytes(),
            expires: (state.clock.now() + DOWNLOAD_VALIDITY).timestamp(),
        }
    }

    fn url(&self, name: &str) -> String {
        let sig = signing::sign_download(self.secret, name, self.expires);
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("file", name)
            .append_pair("expires", &self.expires.to_string())
            .append_pair("sig", &sig)
            .finish();
        format!("{}/api/download?{query}", self.base)
    }
}

/// The whole address of a licence's Sparkle feed, recorded so that the feed route finds it.
pub async fn sparkle_feed(
    state: &AppState,
    db: &Db,
    licence_id: &crate::repo::LicenceId,
) -> Result<String, ApiError> {
    let feed = SparkleFeed::of(
        &state.settings.public_base_url,
        state.settings.download_signing_secret.expose().as_bytes(),
        licence_id.as_str(),
    );
    crate::repo::updates::remember_feed(db, licence_id, &feed.token).await?;
    Ok(feed.url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_files() {
        let f = |n| channel_file(n);
        assert_eq!(
            f("latest.yml"),
            Some(ChannelFile {
                os: "windows",
                arch: None
            })
        );
        assert_eq!(
            f("beta-mac.yml"),
            Some(ChannelFile {
                os: "darwin",
                arch: None
            })
        );
        assert_eq!(
            f("latest-linux-arm64.yml"),
            Some(ChannelFile {
                os: "linux",
                arch: Some("aarch64")
            })
        );
        for bad in [
            "latest",
            "alpha.yml",
            "latest-win.yml",
            "../latest.yml",
            "latest.yml.yml",
        ] {
            assert_eq!(f(bad), None, "{bad}");
        }
    }

    #[test]
    fn escapes() {
        assert_eq!(xml_escape("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
