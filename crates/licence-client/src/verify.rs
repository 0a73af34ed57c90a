//! Checking what the server signed with the pinned Ed25519 keys: the lease (a compact JWS with
//! `alg: EdDSA`) and the `Licence-Signature` header of each answer.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::Error;

/// A public key the client trusts, by its `kid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub kid: String,
    pub key: VerifyingKey,
}

impl PublicKey {
    /// From the `kid` and `x` (base64url, 32 bytes) of `GET /api/license/public-keys`.
    pub fn from_x(kid: &str, x: &str) -> Option<Self> {
        let bytes: [u8; 32] = URL_SAFE_NO_PAD
            .decode(x.trim().trim_end_matches('='))
            .ok()?
            .try_into()
            .ok()?;
        Some(Self {
            kid: kid.to_owned(),
            key: VerifyingKey::from_bytes(&bytes).ok()?,
        })
    }
}

/// The keys pinned when the app was built: `LICENCE_PUBLIC_KEYS=kid:x,kid:x`.
pub fn pinned_keys() -> Vec<PublicKey> {
    parse_keys(option_env!("LICENCE_PUBLIC_KEYS").unwrap_or(""))
}

/// `kid:x` pairs, comma-separated; malformed entries are left out.
pub fn parse_keys(raw: &str) -> Vec<PublicKey> {
    raw.split(',')
        .filter_map(|e| e.trim().split_once(':'))
        .filter_map(|(kid, x)| PublicKey::from_x(kid.trim(), x))
        .collect()
}

/// The claims of a verified lease.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub sub: String,
    pub iid: String,
    pub plan: String,
    pub features: Vec<String>,
    pub daily_quota: u32,
    pub iat: i64,
    pub exp: i64,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

/// Verifies a lease: EdDSA only, a pinned kid, a valid signature. Expiry is the caller's.
pub fn lease(keys: &[PublicKey], jws: &str) -> Result<Lease, Error> {
    let mut parts = jws.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Error::LeaseInvalid("not a compact JWS"));
    };
    let header: Header = decode_json(h).ok_or(Error::LeaseInvalid("header"))?;
    if header.alg != "EdDSA" {
        return Err(Error::LeaseInvalid("algorithm other than EdDSA"));
    }
    let key = header
        .kid
        .and_then(|kid| keys.iter().find(|k| k.kid == kid))
        .ok_or(Error::LeaseInvalid(
            "signed by a key this app does not trust",
        ))?;
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .ok()
        .and_then(|b| Signature::from_slice(&b).ok())
        .ok_or(Error::LeaseInvalid("signature"))?;
    let input = &jws[..h.len() + 1 + p.len()];
    key.key
        .verify_strict(input.as_bytes(), &sig)
        .map_err(|_| Error::LeaseInvalid("bad signature"))?;
    decode_json(p).ok_or(Error::LeaseInvalid("claims"))
}

fn decode_json<T: serde::de::DeserializeOwned>(part: &str) -> Option<T> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}

/// Verifies the `Licence-Signature` of an answer to `method path`.
pub fn answer(
    keys: &[PublicKey],
    method: &str,
    path: &str,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) -> Result<(), Error> {
    let value = headers
        .get("licence-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::BadSignature)?;
    let date = headers
        .get(reqwest::header::DATE)
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::BadSignature)?;
    let mut kid = None;
    let mut sig = None;
    let mut alg = None;
    for part in value.split(',') {
        let Some((name, v)) = part.trim().split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"');
        match name.trim() {
            "kid" => kid = Some(v),
            "sig" => sig = Some(v),
            "alg" => alg = Some(v),
            _ => {}
        }
    }
    if alg != Some("ed25519") {
        return Err(Error::BadSignature);
    }
    let key = kid
        .and_then(|kid| keys.iter().find(|k| k.kid == kid))
        .ok_or(Error::BadSignature)?;
    let sig = sig
        .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
        .and_then(|b| Signature::from_slice(&b).ok())
        .ok_or(Error::BadSignature)?;
    let message = format!(
        "{method} {path}\n{date}\n{}",
        URL_SAFE_NO_PAD.encode(Sha256::digest(body))
    );
    key.key
        .verify(message.as_bytes(), &sig)
        .map_err(|_| Error::BadSignature)
}
