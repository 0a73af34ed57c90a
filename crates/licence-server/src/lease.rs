//! Ed25519 signatures the desktop app checks without the network (contract section 7): the
//! offline lease, a compact JWS with `alg: EdDSA`, and the `Licence-Signature` header over every
//! answer of the licence, release and usage routes.
//!
//! The key ring comes from `LICENCE_SIGNING_KEYS` (`kid:base64 seed`): the first key signs, every
//! key is published at `GET /api/license/public-keys`. To rotate, put the new key first and keep
//! the old one until every app build pinning it is retired.

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// The name of the answer signature header.
pub const SIGNATURE_HEADER: &str = "licence-signature";

/// One Ed25519 key of the ring. AWS-LC signs: in about half the time ed25519-dalek takes, and
/// every licence answer is signed, most of them twice.
#[derive(Clone)]
pub struct LeaseKey {
    pub kid: String,
    signer: std::sync::Arc<Ed25519KeyPair>,
    /// The lease header this key signs with, base64url: the same in every lease it issues.
    header: std::sync::Arc<str>,
}

impl LeaseKey {
    /// The key of `seed` under `kid`.
    pub fn new(kid: String, seed: &[u8; 32]) -> Self {
        // A 32-byte seed is all the key pair needs; AWS-LC refuses nothing else.
        let signer = Ed25519KeyPair::from_seed_unchecked(seed)
            .unwrap_or_else(|_| unreachable!("every 32-byte seed is an Ed25519 key"));
        let header = serde_json::json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
        Self {
            header: URL_SAFE_NO_PAD.encode(header.to_string()).into(),
            kid,
            signer: std::sync::Arc::new(signer),
        }
    }

    /// The 32 bytes of the public key.
    fn public(&self) -> &[u8] {
        self.signer.public_key().as_ref()
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.signer.sign(message).as_ref().to_vec()
    }
}

impl std::fmt::Debug for LeaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl PartialEq for LeaseKey {
    fn eq(&self, other: &Self) -> bool {
        self.kid == other.kid && self.public() == other.public()
    }
}

impl Eq for LeaseKey {}

/// The claims of a lease.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseClaims<'a> {
    pub sub: &'a str,
    pub iid: &'a str,
    pub plan: &'a str,
    pub features: &'a [&'a str],
    pub daily_quota: u32,
    pub iat: i64,
    pub exp: i64,
}

/// `{kid, alg, crv, x}` of `GET /api/license/public-keys`, as a JSON Web Key.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicKey {
    pub kid: String,
    #[schema(value_type = String, example = "OKP")]
    pub kty: &'static str,
    #[schema(value_type = String, example = "EdDSA")]
    pub alg: &'static str,
    #[schema(value_type = String, example = "Ed25519")]
    pub crv: &'static str,
    #[serde(rename = "use")]
    #[schema(value_type = String, example = "sig")]
    pub use_: &'static str,
    pub x: String,
}

#[derive(Debug, Clone)]
pub struct SigningRing {
    keys: Vec<LeaseKey>,
}

impl SigningRing {
    /// Settings guarantee at least one key.
    pub fn new(keys: Vec<LeaseKey>) -> Self {
        Self { keys }
    }

    fn signer(&self) -> Option<&LeaseKey> {
        self.keys.first()
    }

    pub fn public_keys(&self) -> Vec<PublicKey> {
        self.keys
            .iter()
            .map(|k| PublicKey {
                kid: k.kid.clone(),
                kty: "OKP",
                alg: "EdDSA",
                crv: "Ed25519",
                use_: "sig",
                x: URL_SAFE_NO_PAD.encode(k.public()),
            })
            .collect()
    }

    /// A compact JWS of `claims`, signed by the first key.
    pub fn lease(&self, claims: &LeaseClaims<'_>) -> Option<String> {
        let key = self.signer()?;
        let payload = serde_json::to_vec(claims).ok()?;
        let input = format!("{}.{}", key.header, URL_SAFE_NO_PAD.encode(payload));
        let sig = key.sign(input.as_bytes());
        Some(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    /// The `Licence-Signature` value of an answer to `method path`, sent with `date` and `body`.
    /// With the request's `nonce` the signature covers it and names it, so the answer proves
    /// it was made for that request and cannot be replayed to another.
    pub fn answer_signature(
        &self,
        method: &str,
        path: &str,
        date: &str,
        nonce: Option<&str>,
        body: &[u8],
    ) -> Option<String> {
        let key = self.signer()?;
        let sig = key.sign(signed_message(method, path, date, nonce, body).as_bytes());
        let sig = URL_SAFE_NO_PAD.encode(sig);
        Some(match nonce {
            Some(nonce) => format!(
                "kid=\"{}\", alg=\"ed25519\", nonce=\"{nonce}\", sig=\"{sig}\"",
                key.kid
            ),
            None => format!("kid=\"{}\", alg=\"ed25519\", sig=\"{sig}\"", key.kid),
        })
    }
}

/// What an answer signature covers: `<method> <path>\n<Date>\n<base64url sha256 of the body>`,
/// or with the request's nonce `<method> <path>\n<Date>\n<nonce>\n<base64url sha256 of the
/// body>`. A nonce is base64url, so it holds no newline and the two forms never share a message.
pub fn signed_message(
    method: &str,
    path: &str,
    date: &str,
    nonce: Option<&str>,
    body: &[u8],
) -> String {
    let digest =
        URL_SAFE_NO_PAD.encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, body));
    match nonce {
        Some(nonce) => format!("{method} {path}\n{date}\n{nonce}\n{digest}"),
        None => format!("{method} {path}\n{date}\n{digest}"),
    }
}

/// The shortest and longest `Licence-Nonce` accepted.
pub const NONCE_LENGTH: std::ops::RangeInclusive<usize> = 16..=64;

/// Whether `nonce` is a usable `Licence-Nonce`: 16 to 64 base64url characters.
pub fn valid_nonce(nonce: &str) -> bool {
    NONCE_LENGTH.contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The expiry of a lease issued at `now`.
pub fn lease_expiry(now: DateTime<Utc>, grace_days: u32) -> DateTime<Utc> {
    now + chrono::Duration::days(i64::from(grace_days))
}

/// Parses `kid:base64 seed` entries; `Err` is the rule broken.
pub fn parse_keys(raw: &str) -> Result<Vec<LeaseKey>, String> {
    let mut keys: Vec<LeaseKey> = Vec::new();
    for (kid, seed) in crate::settings::key_entries(raw, "base64-seed")? {
        let seed = decode_seed(seed.trim()).ok_or_else(|| {
            format!("the seed of kid `{kid}` must be base64 (standard or URL-safe) or hex")
        })?;
        let seed: [u8; 32] = seed.try_into().map_err(|_| {
            format!("the seed of kid `{kid}` must decode to 32 bytes (openssl rand -base64 32)")
        })?;
        if seed.iter().all(|b| *b == seed[0]) {
            return Err(format!("the seed of kid `{kid}` is not random"));
        }
        keys.push(LeaseKey::new(kid.to_owned(), &seed));
    }
    Ok(keys)
}

/// 64 hex characters (what `openssl rand -hex 32` and deploy/generate-secrets write) or base64.
fn decode_seed(s: &str) -> Option<Vec<u8>> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (0..32)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
            .collect();
    }
    decode_base64(s)
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};

    const SEED_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn key_rules() {
        assert_eq!(parse_keys(&format!("a:{SEED_A}")).map(|k| k.len()), Ok(1));
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        assert_eq!(
            parse_keys(&format!("a:{hex}")),
            parse_keys(&format!("a:{SEED_A}")),
            "hex and base64 of one seed are one key"
        );
        for bad in [
            "nokid".to_owned(),
            format!(":{SEED_A}"),
            format!("bad kid:{SEED_A}"),
            "k1:change-me".to_owned(),
            "k1:AAAA".to_owned(),
            format!("k1:{}", "A".repeat(43)),
            format!("k1:{SEED_A},k1:{SEED_A}"),
            ",".to_owned(),
        ] {
            assert!(parse_keys(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lease_and_answer_verify_with_the_published_key() {
        let ring = SigningRing::new(parse_keys(&format!("k1:{SEED_A}")).expect("keys"));
        let public = &ring.public_keys()[0];
        let x: [u8; 32] = URL_SAFE_NO_PAD
            .decode(&public.x)
            .expect("x")
            .try_into()
            .expect("32");
        let vk = VerifyingKey::from_bytes(&x).expect("key");
        let claims = LeaseClaims {
            sub: "lic",
            iid: "mac",
            plan: "pro",
            features: &["audio"],
            daily_quota: 30,
            iat: 1,
            exp: 2,
        };
        let jws = ring.lease(&claims).expect("lease");
        let (input, sig) = jws.rsplit_once('.').expect("three parts");
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).expect("b64")).expect("sig");
        assert!(vk.verify(input.as_bytes(), &sig).is_ok());

        let header = ring
            .answer_signature(
                "GET",
                "/api/latest",
                "Mon, 23 Nov 2026 08:00:00 GMT",
                None,
                b"{}",
            )
            .expect("signature");
        let sig = header
            .split("sig=\"")
            .nth(1)
            .expect("sig")
            .trim_end_matches('"');
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).expect("b64")).expect("sig");
        let msg = signed_message(
            "GET",
            "/api/latest",
            "Mon, 23 Nov 2026 08:00:00 GMT",
            None,
            b"{}",
        );
        assert!(vk.verify(msg.as_bytes(), &sig).is_ok());
        let other = signed_message(
            "GET",
            "/api/latest",
            "Mon, 23 Nov 2026 08:00:01 GMT",
            None,
            b"{}",
        );
        assert!(vk.verify(other.as_bytes(), &sig).is_err());
    }

    #[test]
    fn nonce_rules() {
        assert!(valid_nonce(&"A".repeat(16)));
        assert!(valid_nonce(&"a-_9".repeat(16)));
        for bad in [
            String::new(),
            "A".repeat(15),
            "A".repeat(65),
            "AAAAAAAAAAAAAAA=".into(),
            "AAAAAAAA/AAAAAAA".into(),
            "AAAAAAAA AAAAAAA".into(),
            "AAAAAAAA\nAAAAAAA".into(),
            "AAAAAAAAéAAAAAAA".into(),
        ] {
            assert!(!valid_nonce(&bad), "{bad:?}");
        }
    }
}
