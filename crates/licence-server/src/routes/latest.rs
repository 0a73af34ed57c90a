use actix_web::{HttpRequest, web};
use serde::Serialize;

use super::{AppState, authorise, bearer};
use crate::error::ApiError;
use crate::releases::FileInfo;
use crate::repo::Db;
use crate::signing::{self, DOWNLOAD_VALIDITY};

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Release)]
pub struct Answer {
    version: String,
    #[schema(required = true, format = DateTime)]
    pub_date: Option<String>,
    #[schema(required = true)]
    notes: Option<String>,
    licensed: bool,
    files: Vec<File>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ReleaseFile)]
pub(crate) struct File {
    platform: String,
    name: String,
    size: u64,
    sha256: String,
    /// A signed download address valid for 15 minutes when the request carried a valid
    /// licence token, else null.
    #[schema(required = true)]
    url: Option<String>,
}

/// `GET /api/latest`: the release of `latest.json`; download addresses are signed only for a
/// valid token of a licence with access and an activated installation. Any other token (or
/// none) is simply not licensed.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn latest(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
) -> Result<web::Json<Answer>, ApiError> {
    let licensed = match bearer(&req) {
        Ok(Some(token)) => match state.keys.verify(token, state.clock.now()) {
            Ok(claims) => match authorise(&state, &db, claims).await {
                Ok(_) => true,
                Err(err @ ApiError::DatabaseUnavailable(_)) => return Err(err),
                Err(_) => false,
            },
            Err(_) => false,
        },
        Ok(None) | Err(_) => false,
    };
    let builds = state.builds.clone();
    let (manifest, files) = web::block(move || {
        let manifest = builds.manifest()?;
        let mut files: Vec<(String, String, FileInfo)> = Vec::new();
        for f in &manifest.files {
            match builds.file(&f.name)? {
                Some(info) => files.push((f.platform.clone(), f.name.clone(), info)),
                None => tracing::error!(name = %f.name, "release file listed but not servable"),
            }
        }
        anyhow::Ok((manifest, files))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::ReleasesUnavailable)?;

    let expires = (state.clock.now() + DOWNLOAD_VALIDITY).timestamp();
    let secret = state.settings.download_signing_secret.expose().as_bytes();
    let base = state
        .settings
        .public_base_url
        .as_str()
        .trim_end_matches('/');
    let files = files
        .into_iter()
        .map(|(platform, name, info)| {
            let url = licensed.then(|| {
                let sig = signing::sign_download(secret, &name, expires);
                let mut url = url::Url::parse(&format!("{base}/api/download"))
                    .unwrap_or_else(|_| state.settings.public_base_url.clone());
                url.query_pairs_mut()
                    .append_pair("file", &name)
                    .append_pair("expires", &expires.to_string())
                    .append_pair("sig", &sig);
                url.to_string()
            });
            File {
                platform,
                name,
                size: info.size,
                sha256: info.sha256,
                url,
            }
        })
        .collect();
    Ok(web::Json(Answer {
        version: manifest.version,
        pub_date: manifest.pub_date,
        notes: manifest.notes,
        licensed,
        files,
    }))
}
