//! Licence tokens: HS256 JWTs carrying `kid` in the header.
//!
//! The key ring comes from `LICENCE_JWT_KEYS`: the first key signs, every key verifies, so a new
//! key is put first and the old one stays in the ring until the tokens it signed have expired.
//! Only HS256 with a kid of the ring is accepted: `alg: none` cannot even be parsed (the library
//! has no such algorithm), any other algorithm and any unknown kid are refused before the
//! signature is looked at.
//!
//! Lifetime: [`TOKEN_LIFETIME`] (24 hours). The desktop app revalidates at least daily while
//! online and may keep working offline for [`OFFLINE_GRACE`] (7 days) after `tokenExpiresAt`;
//! past that it blocks until it can validate again. Expiry is checked against the service's clock
//! with no leeway: the tokens are issued and checked by the same service.

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::settings::JwtKey;

/// How long a token is valid after it is issued.
pub const TOKEN_LIFETIME: chrono::Duration = chrono::Duration::hours(24);
/// How long after `tokenExpiresAt` the desktop app may keep working without reaching the server.
pub const OFFLINE_GRACE: chrono::Duration = chrono::Duration::days(7);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The licence id.
    pub sub: String,
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
}

pub struct KeyRing {
    keys: Vec<RingKey>,
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
        Self {
            keys: keys
                .iter()
                .map(|k| RingKey {
                    kid: k.kid.clone(),
                    encoding: EncodingKey::from_secret(k.secret.expose().as_bytes()),
                    decoding: DecodingKey::from_secret(k.secret.expose().as_bytes()),
                })
                .collect(),
        }
    }

    /// A token for `licence_id` on `instance_id`, issued at `now`.
    pub fn issue(
        &self,
        licence_id: &str,
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
            sub: licence_id.to_owned(),
            iid: instance_id.to_owned(),
            plan: plan.to_owned(),
            iat: now.timestamp(),
            exp: expires.timestamp(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(signer.kid.clone());
        header.typ = Some("JWT".to_owned());
        let token = jsonwebtoken::encode(&header, &claims, &signer.encoding)
            .map_err(|e| TokenError::Signing(e.to_string()))?;
        // The wire shows whole seconds; the claim is the truth.
        let expires = DateTime::from_timestamp(claims.exp, 0).unwrap_or(expires);
        Ok((token, expires))
    }

    /// The claims of a token this service issued with a key still in the ring, not expired at `now`.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != Algorithm::HS256 {
            return Err(TokenError::Algorithm);
        }
        let kid = header.kid.ok_or(TokenError::UnknownKid)?;
        let key = self
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(TokenError::UnknownKid)?;
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is judged by the service's own clock below, so that it is one clock throughout.
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation)
            .map_err(|_| TokenError::Invalid)?;
        if data.claims.exp <= now.timestamp() {
            return Err(TokenError::Expired);
        }
        Ok(data.claims)
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

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn first_key_signs_all_verify() {
        let old = KeyRing::new(&[key("k1", A)]);
        let (token, exp) = old.issue("lic", "inst", "pro", now()).expect("sign");
        assert_eq!(exp, now() + TOKEN_LIFETIME);
        let rotated = KeyRing::new(&[key("k2", B), key("k1", A)]);
        let claims = rotated
            .verify(&token, now())
            .expect("old key still verifies");
        assert_eq!((claims.sub.as_str(), claims.iid.as_str()), ("lic", "inst"));
        let (fresh, _) = rotated.issue("lic", "inst", "pro", now()).expect("sign");
        let header = jsonwebtoken::decode_header(&fresh).expect("header");
        assert_eq!(header.kid.as_deref(), Some("k2"));
        let retired = KeyRing::new(&[key("k2", B)]);
        assert!(matches!(
            retired.verify(&token, now()),
            Err(TokenError::UnknownKid)
        ));
    }

    #[test]
    fn expiry_and_tampering() {
        let ring = KeyRing::new(&[key("k1", A)]);
        let (token, exp) = ring.issue("lic", "inst", "pro", now()).expect("sign");
        assert!(
            ring.verify(&token, exp - chrono::Duration::seconds(1))
                .is_ok()
        );
        assert!(matches!(ring.verify(&token, exp), Err(TokenError::Expired)));
        let same_kid_other_secret = KeyRing::new(&[key("k1", B)]);
        assert!(matches!(
            same_kid_other_secret.verify(&token, now()),
            Err(TokenError::Invalid)
        ));
        assert!(matches!(
            ring.verify("not.a.token", now()),
            Err(TokenError::Malformed)
        ));
    }
}
