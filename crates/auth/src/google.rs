//! Google sign-in as an OAuth 2.0 authorization-code flow with PKCE (RFC 7636). The user's
//! identity comes from the userinfo endpoint, called over TLS with the fresh access token, so no
//! ID-token signature has to be checked locally.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use url::Url;

use crate::settings::GoogleSettings;

/// Path of the callback, relative to `AUTH_BASE_URL`.
pub const CALLBACK_PATH: &str = "/api/auth/callback/google";
const SCOPES: &str = "openid email profile";

/// `code_challenge` for a verifier (S256).
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The absolute callback URL Google redirects to.
pub fn redirect_uri(base: &Url) -> String {
    let mut base = base.as_str().trim_end_matches('/').to_owned();
    base.push_str(CALLBACK_PATH);
    base
}

/// The address the browser is sent to.
pub fn authorization_url(
    google: &GoogleSettings,
    base: &Url,
    state: &str,
    verifier: &str,
) -> String {
    let mut url = google.auth_url.clone();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &google.client_id)
        .append_pair("redirect_uri", &redirect_uri(base))
        .append_pair("scope", SCOPES)
        .append_pair("state", state)
        .append_pair("code_challenge", &challenge(verifier))
        .append_pair("code_challenge_method", "S256");
    url.to_string()
}

#[derive(Debug, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    pub id_token: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Profile {
    pub sub: String,
    pub email: Option<String>,
    #[serde(default)]
    pub email_verified: bool,
    pub name: Option<String>,
    pub picture: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("the token exchange failed: {0}")]
    Exchange(String),
    #[error("the profile could not be read: {0}")]
    Profile(String),
}

/// Exchanges the authorization code for tokens.
pub async fn exchange(
    http: &reqwest::Client,
    google: &GoogleSettings,
    base: &Url,
    code: &str,
    verifier: &str,
) -> Result<Tokens, FlowError> {
    let redirect = redirect_uri(base);
    let req = http.post(google.token_url.clone()).form(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect.as_str()),
        ("client_id", google.client_id.as_str()),
        ("client_secret", google.client_secret.expose()),
        ("code_verifier", verifier),
    ]);
    json_answer(req, FlowError::Exchange).await
}

/// Reads the signed-in Google user's profile.
pub async fn profile(
    http: &reqwest::Client,
    google: &GoogleSettings,
    access_token: &str,
) -> Result<Profile, FlowError> {
    let req = http
        .get(google.userinfo_url.clone())
        .bearer_auth(access_token);
    json_answer(req, FlowError::Profile).await
}

/// Sends `req` and reads the JSON of a successful answer; every failure (no answer, an error
/// status, another body) is reported as `error`.
async fn json_answer<T: DeserializeOwned>(
    req: reqwest::RequestBuilder,
    error: fn(String) -> FlowError,
) -> Result<T, FlowError> {
    let resp = req
        .send()
        .await
        .map_err(|e| error(e.without_url().to_string()))?;
    if !resp.status().is_success() {
        return Err(error(format!("status {}", resp.status())));
    }
    resp.json()
        .await
        .map_err(|e| error(e.without_url().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
