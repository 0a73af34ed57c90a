//! Passkeys, as better-auth's passkey plugin offers them (docs/api.md, "Passkeys"). webauthn-rs
//! runs the ceremonies and checks every signature; this module holds what lies around them: the
//! relying party taken from `AUTH_BASE_URL`, the state a ceremony keeps between its two
//! requests, the options in the shape better-auth's client reads, and the rows the list shows.
//!
//! Every passkey is a discoverable credential with user verification: it signs in alone, with no
//! address typed and no second factor, so it must be a key that the device unlocks (a PIN, a
//! fingerprint), not a bare token that anyone holding it can press.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::Duration;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use session::User;
use url::Url;
use webauthn_rs::prelude::{
    COSEKeyType, Credential, CredentialID, DiscoverableAuthentication, Passkey,
    PasskeyRegistration, Uuid, Webauthn, WebauthnBuilder,
};

/// The cookie that names a ceremony's state, under the product's prefix (as better-auth's
/// `webAuthnChallengeCookie`).
pub const CHALLENGE_COOKIE: &str = "better-auth-passkey";
/// How long a ceremony may take, from the options to the answer (better-auth's 5 minutes).
pub const CEREMONY_LIFETIME: Duration = Duration::minutes(5);
/// Passkeys one account may hold: enough for every device a person owns, and a bound on what
/// each sign-in options answer lists.
pub const MAX_PER_USER: i64 = 20;
/// The longest name a passkey may be given.
pub const MAX_NAME_CHARS: usize = 100;

/// The relying party of `base_url`: its host is the id, its origin the only one accepted. None
/// when the host is an IP address, where browsers offer no passkeys.
pub fn relying_party(base_url: &Url, name: &str) -> Option<Webauthn> {
    let host = base_url.domain()?;
    let origin = Url::parse(&base_url.origin().ascii_serialization()).ok()?;
    WebauthnBuilder::new(host, &origin)
        .ok()?
        .rp_name(name)
        .build()
        .ok()
}

/// What a ceremony keeps on the server between its options and its answer (in
/// `auth.verification`, under the cookie's value).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Ceremony {
    Registration {
        #[serde(rename = "userId")]
        user_id: String,
        state: PasskeyRegistration,
    },
    Authentication {
        state: DiscoverableAuthentication,
    },
}

/// Where the authenticator may live, as the options route's query names it.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Attachment {
    Platform,
    CrossPlatform,
}

impl Attachment {
    fn as_str(self) -> &'static str {
        match self {
            Self::Platform => "platform",
            Self::CrossPlatform => "cross-platform",
        }
    }
}

/// The options of a registration for `user` and the state to keep. `name` is the name the
/// authenticator shows (better-auth's `name` query; the address otherwise); `existing` are the
/// user's passkeys, which the authenticator must not register twice.
pub fn start_registration(
    rp: &Webauthn,
    user: &User,
    name: Option<&str>,
    attachment: Option<Attachment>,
    existing: Vec<CredentialID>,
) -> Result<(Value, Ceremony), webauthn_rs::prelude::WebauthnError> {
    // A fresh handle per registration, as better-auth makes one: it identifies nothing but the
    // credential, which is found by its id at sign-in.
    let (ccr, state) = rp.start_passkey_registration(
        Uuid::new_v4(),
        name.unwrap_or(&user.email),
        &user.email,
        Some(existing),
    )?;
    let mut options = serde_json::to_value(ccr.public_key).unwrap_or(Value::Null);
    let mut selection = json!({
        "residentKey": "required",
        "requireResidentKey": true,
        "userVerification": "required",
    });
    if let Some(attachment) = attachment {
        selection["authenticatorAttachment"] = json!(attachment.as_str());
    }
    options["authenticatorSelection"] = selection;
    for list in ["excludeCredentials", "hints"] {
        if options.get(list).is_none() {
            options[list] = json!([]);
        }
    }
    let ceremony = Ceremony::Registration {
        user_id: user.id.as_str().to_owned(),
        state,
    };
    Ok((options, ceremony))
}

/// The options of a sign-in and the state to keep: any of the relying party's discoverable
/// passkeys may answer. `allowed` (the signed-in user's own, as better-auth lists them) only
/// narrows what the browser offers.
pub fn start_authentication(
    rp: &Webauthn,
    allowed: &[(String, Option<String>)],
) -> Result<(Value, Ceremony), webauthn_rs::prelude::WebauthnError> {
    let (rcr, state) = rp.start_discoverable_authentication()?;
    let mut options = serde_json::to_value(rcr.public_key).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut options {
        map.remove("extensions");
        map.remove("hints");
        if allowed.is_empty() {
            map.remove("allowCredentials");
        } else {
            let listed = allowed
                .iter()
                .map(|(id, transports)| {
                    let mut descriptor = json!({"id": id, "type": "public-key"});
                    if let Some(t) = transports.as_deref().filter(|t| !t.is_empty()) {
                        descriptor["transports"] = json!(t.split(',').collect::<Vec<_>>());
                    }
                    descriptor
                })
                .collect();
            map.insert("allowCredentials".into(), Value::Array(listed));
        }
    }
    Ok((options, Ceremony::Authentication { state }))
}

/// What the list shows of a new passkey, read from what the verifier keeps of it.
pub struct Registered {
    pub credential_id: String,
    pub public_key: String,
    pub credential: Value,
    pub counter: i64,
    pub device_type: &'static str,
    pub backed_up: bool,
    pub transports: Option<String>,
}

impl Registered {
    /// `reported` is what the browser said of the key's transports at registration (its
    /// `response.transports`), which the verifier does not keep.
    pub fn of(passkey: &Passkey, reported: Option<String>) -> Result<Self, serde_json::Error> {
        let credential: Credential = passkey.clone().into();
        Ok(Self {
            credential_id: URL_SAFE_NO_PAD.encode(passkey.cred_id()),
            public_key: STANDARD.encode(public_key(&credential.cred.key)),
            credential: serde_json::to_value(passkey)?,
            counter: i64::from(credential.counter),
            // better-auth's words: a key that a backup can carry to other devices is "multiDevice".
            device_type: if credential.backup_eligible {
                "multiDevice"
            } else {
                "singleDevice"
            },
            backed_up: credential.backup_state,
            transports: reported,
        })
    }
}

/// The transports a registration answer reports (`response.transports`), comma-separated as
/// better-auth stores them: only the short names WebAuthn defines, at most eight.
pub fn reported_transports(answer: &Value) -> String {
    answer["response"]["transports"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .filter(|t| {
                    !t.is_empty()
                        && t.len() <= 16
                        && t.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                })
                .take(8)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The public key's raw bytes: the uncompressed point for an elliptic curve (X9.62), the
/// public value for EdDSA, the modulus for RSA.
fn public_key(key: &COSEKeyType) -> Vec<u8> {
    match key {
        COSEKeyType::EC_EC2(ec) => [&[4u8][..], &ec.x, &ec.y].concat(),
        COSEKeyType::EC_OKP(okp) => okp.x.clone(),
        COSEKeyType::RSA(rsa) => rsa.n.clone(),
    }
}

/// A stored passkey as the verifier needs it back.
pub fn from_stored(credential: Value) -> Result<Passkey, serde_json::Error> {
    serde_json::from_value(credential)
}

/// A passkey name from the client: trimmed, not empty, at most [`MAX_NAME_CHARS`].
pub fn valid_name(name: &str) -> Option<String> {
    let name = name.trim();
    (!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relying_party_is_the_base_urls_host_and_never_an_ip_address() {
        let rp = |url: &str| relying_party(&Url::parse(url).unwrap(), "Digiuno").is_some();
        assert!(rp("https://app.example.com"));
        assert!(rp("http://localhost:8080/"));
        assert!(!rp("http://127.0.0.1:8080"));
        assert!(!rp("http://[::1]:8080"));
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(valid_name("  Telefono "), Some("Telefono".into()));
        assert_eq!(valid_name("   "), None);
        assert!(valid_name(&"é".repeat(MAX_NAME_CHARS)).is_some());
        assert!(valid_name(&"é".repeat(MAX_NAME_CHARS + 1)).is_none());
    }
}
