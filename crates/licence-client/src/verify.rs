//! Checking what the server signed with the pinned Ed25519 keys: the lease (a compact JWS with
//! `alg: EdDSA`) and the `Licence-Signature` header of each answer.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signature, VerifyingKey};
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

/// How far an answer's `Date` may be from the client's clock. A replayed answer carries the time
/// it was first made, so the window bounds how long a captured answer is worth anything.
pub const ANSWER_DATE_TOLERANCE: chrono::Duration = chrono::Duration::minutes(5);

/// Verifies the `Licence-Signature` of an answer to `method path` sent with `nonce`: signed by a
/// pinned key over `<method> <path>\n<Date>\n<nonce>\n<digest>`, naming that nonce, and dated
/// within [`ANSWER_DATE_TOLERANCE`] of `now`. The signature is checked first, so a `Date` that
/// nobody signed never decides which error is reported.
pub fn answer(
    keys: &[PublicKey],
    request: &Request<'_>,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let value = single(headers, "licence-signature").ok_or(Error::BadSignature)?;
    let date = single(headers, reqwest::header::DATE.as_str()).ok_or(Error::BadSignature)?;
    let mut kid = None;
    let mut sig = None;
    let mut alg = None;
    let mut nonce = None;
    for part in value.split(',') {
        let Some((name, v)) = part.trim().split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"');
        let slot = match name.trim() {
            "kid" => &mut kid,
            "sig" => &mut sig,
            "alg" => &mut alg,
            "nonce" => &mut nonce,
            _ => continue,
        };
        // A parameter named twice leaves it open which one was meant.
        if slot.replace(v).is_some() {
            return Err(Error::BadSignature);
        }
    }
    if alg != Some("ed25519") {
        return Err(Error::BadSignature);
    }
    // An answer that names no nonce, or another one, was made for another request.
    if !nonce.is_some_and(|n| constant_time_eq(n.as_bytes(), request.nonce.as_bytes())) {
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
        "{} {}\n{date}\n{}\n{}",
        request.method,
        request.path,
        request.nonce,
        URL_SAFE_NO_PAD.encode(Sha256::digest(body))
    );
    key.key
        .verify_strict(message.as_bytes(), &sig)
        .map_err(|_| Error::BadSignature)?;
    let dated = DateTime::parse_from_rfc2822(date)
        .map(|d| d.with_timezone(&Utc))
        .map_err(|_| Error::BadSignature)?;
    if (dated - now).abs() > ANSWER_DATE_TOLERANCE {
        return Err(Error::ClockSkew { server_date: dated });
    }
    Ok(())
}

/// What an answer must be bound to: the request's method, path and nonce.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub nonce: &'a str,
}

/// The one value of header `name`; `None` when it is missing, repeated or not text.
fn single<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test cases 2 and 6: a short key, and a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
