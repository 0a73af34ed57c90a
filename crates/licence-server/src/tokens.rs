//! Licence tokens: HS256 JWTs carrying `kid` in the header.
//!
//! The key ring comes from `LICENCE_JWT_KEYS`: the first key signs, every key verifies, so a new
//! key is put first and the old one stays in the ring until the tokens it signed have expired.
//! Only HS256 with a kid of the ring is accepted: any other algorithm (`none` included) and any
//! unknown kid are refused before the signature is looked at, and the signature is compared in
//! constant time (AWS-LC's HMAC).
//!
//! The tokens are made and checked by `jsonwebtoken` (on AWS-LC's HMAC). The header is read
//! first, to refuse another algorithm or an unknown kid before any signature is looked at and to
//! pick the key; expiry is then judged by the service's own clock, which the library does not
//! know. The tests check the format independently.
//!
//! Lifetime: [`TOKEN_LIFETIME`] (24 hours). The desktop app revalidates at least daily while
//! online and may keep working offline for [`OFFLINE_GRACE`] (7 days) after `tokenExpiresAt`;
//! past that it blocks until it can validate again. Expiry is checked against the service's clock
//! with no leeway: the tokens are issued and checked by the same service.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::repo::LicenceId;
use crate::settings::JwtKey;

/// How long a token is valid after it is issued.
pub const TOKEN_LIFETIME: chrono::Duration = chrono::Duration::hours(24);
/// How long after `tokenExpiresAt` the desktop app may keep working without reaching the server.
pub const OFFLINE_GRACE: chrono::Duration = chrono::Duration::days(7);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The licence id.
    pub sub: LicenceId,
    /// The installation (`instanceId`) the token was issued to.
    pub iid: String,
    pub plan: String,
    pub iat: i64,
    pub exp: i64,
}

struct RingKey {
    kid: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The header this key signs with: the same in every token it issues.
    header: Header,
}

/// The fields of a token header that are looked at before the library reads the token; others
/// (`typ`) are ignored. Read here because the library refuses an algorithm it does not know
/// (`none`) as a malformed header, where this service answers that the algorithm is wrong.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    kid: Option<String>,
}

/// The JSON value in a base64url segment of a token.
fn segment<T: serde::de::DeserializeOwned>(part: &str) -> Option<T> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub struct KeyRing {
    keys: Vec<RingKey>,
    validation: Validation,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
        f.debug_struct("KeyRing").field("kids", &kids).finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the token cannot be parsed")]
    Malformed,
    #[error("the token is not HS256")]
    Algorithm,
    #[error("the token names no known key")]
    UnknownKid,
    #[error("the token's signature or claims are invalid")]
    Invalid,
    #[error("the token has expired")]
    Expired,
    #[error("the token could not be signed: {0}")]
    Signing(String),
}

impl KeyRing {
    /// Settings guarantee at least one key; an empty ring can verify nothing and sign nothing.
    pub fn new(keys: &[JwtKey]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is judged by the service's clock in `verify`; the claims themselves are all
        // required by `Claims`' shape.
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        validation.leeway = 0;
        Self {
            keys: keys
                .iter()
                .map(|k| {
                    let secret = k.secret.expose().as_bytes();
                    RingKey {
                        kid: k.kid.clone(),
                        encoding: EncodingKey::from_secret(secret),
                        decoding: DecodingKey::from_secret(secret),
                        header: Header {
                            kid: Some(k.kid.clone()),
                            ..Header::new(Algorithm::HS256)
                        },
                    }
                })
                .collect(),
            validation,
        }
    }

    /// A token for `licence_id` on `instance_id`, issued at `now`.
    pub fn issue(
        &self,
        licence_id: &LicenceId,
        instance_id: &str,
        plan: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, DateTime<Utc>), TokenError> {
        let signer = self
            .keys
            .first()
            .ok_or_else(|| TokenError::Signing("the key ring is empty".into()))?;
        let expires = now + TOKEN_LIFETIME;
        let claims = Claims {
            sub: licence_id.clone(),
            iid: instance_id.to_owned(),
            plan: plan.to_owned(),
            iat: now.timestamp(),
            exp: expires.timestamp(),
        };
        let token = jsonwebtoken::encode(&signer.header, &claims, &signer.encoding)
            .map_err(|e| TokenError::Signing(e.to_string()))?;
        // The wire shows whole seconds; the claim is the truth.
        let expires = DateTime::from_timestamp(claims.exp, 0).unwrap_or(expires);
        Ok((token, expires))
    }

    /// The claims of a token this service issued with a key still in the ring, not expired at `now`.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, TokenError> {
        let mut parts = token.split('.');
        let (Some(head), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let header: JoseHeader = segment(head).ok_or(TokenError::Malformed)?;
        if header.alg != "HS256" {
            return Err(TokenError::Algorithm);
        }
        let kid = header.kid.ok_or(TokenError::UnknownKid)?;
        let key = self
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(TokenError::UnknownKid)?;
        // The signature is compared in constant time (AWS-LC's HMAC verification); every claim
        // is required: a token without `exp` or `sub` does not decode.
        let claims = jsonwebtoken::decode::<Claims>(token, &key.decoding, &self.validation)
            .map_err(|_| TokenError::Invalid)?
            .claims;
        // Expiry is judged by the service's own clock, with no leeway.
        if claims.exp <= now.timestamp() {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use service_kit::Secret;

    fn key(kid: &str, secret: &str) -> JwtKey {
        JwtKey {
            kid: kid.to_owned(),
            secret: Secret::new(secret),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    /// A token `ring` issues now for installation "inst" of licence "lic" on pro; its expiry.
    fn issue(ring: &KeyRing) -> (String, DateTime<Utc>) {
        ring.issue(&"lic".into(), "inst", "pro", now())
            .expect("sign")
    }

    /// Why `ring` refuses `token` now.
    fn refusal(ring: &KeyRing, token: &str) -> TokenError {
        ring.verify(token, now()).expect_err("refused")
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn first_key_signs_all_verify() {
        let old = KeyRing::new(&[key("k1", A)]);
        let (token, exp) = issue(&old);
        assert_eq!(exp, now() + TOKEN_LIFETIME);
        let rotated = KeyRing::new(&[key("k2", B), key("k1", A)]);
        let claims = rotated
            .verify(&token, now())
            .expect("old key still verifies");
        assert_eq!((claims.sub.as_str(), claims.iid.as_str()), ("lic", "inst"));
        let (fresh, _) = issue(&rotated);
        let header = jsonwebtoken::decode_header(&fresh).expect("header");
        assert_eq!(header.kid.as_deref(), Some("k2"));
        let retired = KeyRing::new(&[key("k2", B)]);
        assert!(matches!(refusal(&retired, &token), TokenError::UnknownKid));
    }

    /// What this ring issues, a JWT library accepts, and the other way round; what it refuses
    /// is refused for the right reason.
    #[test]
    fn tokens_agree_with_a_jwt_library() {
        use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
        let ring = KeyRing::new(&[key("k1", A)]);
        let (ours, _) = issue(&ring);
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        let theirs_read = jsonwebtoken::decode::<Claims>(
            &ours,
            &DecodingKey::from_secret(A.as_bytes()),
            &validation,
        )
        .expect("the library accepts our token");
        assert_eq!(theirs_read.header.typ.as_deref(), Some("JWT"));
        let claims = theirs_read.claims;
        assert_eq!(claims.exp - claims.iat, TOKEN_LIFETIME.num_seconds());
        let signed = |alg: Algorithm, secret: &str| {
            let header = Header {
                kid: Some("k1".to_owned()),
                ..Header::new(alg)
            };
            jsonwebtoken::encode(
                &header,
                &claims,
                &EncodingKey::from_secret(secret.as_bytes()),
            )
            .expect("library signs")
        };
        let theirs = signed(Algorithm::HS256, A);
        assert_eq!(ring.verify(&theirs, now()).expect("ours accepts"), claims);
        assert!(matches!(
            refusal(&ring, &signed(Algorithm::HS384, A)),
            TokenError::Algorithm
        ));
        assert!(matches!(
            refusal(&ring, &signed(Algorithm::HS256, B)),
            TokenError::Invalid
        ));
        let parts: Vec<&str> = theirs.split('.').collect();
        let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","kid":"k1"}"#);
        assert!(matches!(
            refusal(&ring, &format!("{none}.{}.", parts[1])),
            TokenError::Algorithm
        ));
        let no_kid = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256"}"#);
        assert!(matches!(
            refusal(&ring, &format!("{no_kid}.{}.{}", parts[1], parts[2])),
            TokenError::UnknownKid
        ));
        let other_claims = URL_SAFE_NO_PAD
            .encode(br#"{"sub":"other","iid":"inst","plan":"pro","iat":1,"exp":9999999999}"#);
        assert!(matches!(
            refusal(&ring, &format!("{}.{other_claims}.{}", parts[0], parts[2])),
            TokenError::Invalid
        ));
        assert!(matches!(
            refusal(&ring, &format!("{theirs}.x")),
            TokenError::Malformed
        ));
    }

    /// The wire format, read without any JWT library: a header naming HS256, the type and the
    /// kid; the claims as they are; an HMAC-SHA256 over the first two segments.
    #[test]
    fn the_format_by_hand() {
        use aws_lc_rs::hmac;
        let ring = KeyRing::new(&[key("k1", A)]);
        let (token, _) = issue(&ring);
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value = segment(parts[0]).expect("header");
        assert_eq!(
            header,
            serde_json::json!({"alg": "HS256", "typ": "JWT", "kid": "k1"})
        );
        let claims: serde_json::Value = segment(parts[1]).expect("claims");
        assert_eq!(
            claims,
            serde_json::json!({
                "sub": "lic", "iid": "inst", "plan": "pro",
                "iat": now().timestamp(),
                "exp": (now() + TOKEN_LIFETIME).timestamp(),
            })
        );
        let tag = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, A.as_bytes()),
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
        );
        assert_eq!(parts[2], URL_SAFE_NO_PAD.encode(tag.as_ref()));
    }

    #[test]
    fn expiry_and_tampering() {
        let ring = KeyRing::new(&[key("k1", A)]);
        let (token, exp) = issue(&ring);
        assert!(
            ring.verify(&token, exp - chrono::Duration::seconds(1))
                .is_ok()
        );
        assert!(matches!(ring.verify(&token, exp), Err(TokenError::Expired)));
        let same_kid_other_secret = KeyRing::new(&[key("k1", B)]);
        assert!(matches!(
            refusal(&same_kid_other_secret, &token),
            TokenError::Invalid
        ));
        assert!(matches!(
            refusal(&ring, "not.a.token"),
            TokenError::Malformed
        ));
    }
}
