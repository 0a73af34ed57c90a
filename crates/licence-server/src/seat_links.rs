//! The signed address of a licence's seat page (contract section 12, "Seats a buyer manages"):
//! `PUBLIC_BASE_URL/licence/manage?t=<token>`, mailed to the buyer, valid 30 days.
//!
//! The token is `<licence id>.<expiry, Unix seconds>.<base64url HMAC-SHA256>`. Its MAC covers the
//! licence id, the expiry and the buyer's address as the licence holds it, so a link stops working
//! once the address changes (an erasure puts a tombstone there). The key is derived from
//! `DOWNLOAD_SIGNING_SECRET` under a label of its own: no operator has one more secret to keep,
//! and no download signature can ever pass for a seat token or the other way round. Forms of
//! the page carry a CSRF value bound to the token and to a random value of the page that drew
//! them. Every comparison is in constant time (`Mac::verify_slice`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use url::Url;

type HmacSha256 = Hmac<Sha256>;

/// How long a mailed seat link works.
pub const VALIDITY: chrono::Duration = chrono::Duration::days(30);

/// The path of the seat page.
pub const PAGE_PATH: &str = "/licence/manage";

/// The longest token read: the id of a licence (36), an expiry (up to 20 digits), a MAC (43).
const MAX_TOKEN_LEN: usize = 128;

/// What the addresses of the licence e-mail are made of: the public address of the service and
/// the secret they are signed with.
#[derive(Clone, Copy)]
pub struct Links<'a> {
    pub base: &'a Url,
    pub secret: &'a [u8],
}

impl std::fmt::Debug for Links<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

impl<'a> Links<'a> {
    pub fn of(settings: &'a crate::Settings) -> Self {
        Self {
            base: &settings.public_base_url,
            secret: settings.download_signing_secret.expose().as_bytes(),
        }
    }

    /// The key of seat tokens and their forms.
    fn key(&self) -> HmacSha256 {
        let mut derive = mac(self.secret);
        derive.update(b"licence-server seat link key v1");
        mac(&derive.finalize().into_bytes())
    }

    /// A token for the licence `licence_id` of `email`, valid [`VALIDITY`] from `now`.
    pub fn token(&self, licence_id: &str, email: &str, now: DateTime<Utc>) -> String {
        let expires = (now + VALIDITY).timestamp();
        let sig = self.token_mac(licence_id, expires, email).finalize();
        format!(
            "{licence_id}.{expires}.{}",
            URL_SAFE_NO_PAD.encode(sig.into_bytes())
        )
    }

    /// The seat page's address for the licence `licence_id` of `email`.
    pub fn page_url(&self, licence_id: &str, email: &str, now: DateTime<Utc>) -> String {
        let mut url = self.base.clone();
        url.set_path(PAGE_PATH);
        url.set_query(None);
        url.query_pairs_mut()
            .append_pair("t", &self.token(licence_id, email, now));
        url.to_string()
    }

    fn token_mac(&self, licence_id: &str, expires: i64, email: &str) -> HmacSha256 {
        let mut m = self.key();
        // Ids and expiries hold no newline; the address comes last, so none is ambiguous.
        m.update(format!("seat-link\n{licence_id}\n{expires}\n").as_bytes());
        m.update(email.trim().to_lowercase().as_bytes());
        m
    }

    /// Whether `token` was made by [`Links::token`] for the licence it names and `email`, and
    /// is still valid at `now`.
    pub fn check(&self, token: &Token, email: &str, now: DateTime<Utc>) -> Checked {
        let authentic = self
            .token_mac(&token.licence_id, token.expires, email)
            .verify_slice(&token.mac)
            .is_ok();
        if !authentic {
            Checked::Forged
        } else if token.expires <= now.timestamp() {
            Checked::Expired
        } else {
            Checked::Valid
        }
    }

    /// The CSRF value of a form drawn on the page of `token` with the page value `page`.
    pub fn csrf(&self, token: &str, page: &str) -> String {
        let mut m = self.key();
        m.update(format!("seat-form\n{page}\n{token}").as_bytes());
        URL_SAFE_NO_PAD.encode(m.finalize().into_bytes())
    }

    /// Whether `csrf` is [`Links::csrf`] of (`token`, `page`).
    pub fn csrf_matches(&self, token: &str, page: &str, csrf: &str) -> bool {
        let Ok(given) = URL_SAFE_NO_PAD.decode(csrf) else {
            return false;
        };
        let mut m = self.key();
        m.update(format!("seat-form\n{page}\n{token}").as_bytes());
        m.verify_slice(&given).is_ok()
    }

    /// A key under which a count per e-mail address is kept, without keeping the address.
    pub fn address_key(&self, email: &str) -> String {
        let mut m = self.key();
        m.update(b"seat-mail\n");
        m.update(email.trim().to_lowercase().as_bytes());
        crate::signing::to_hex(&m.finalize().into_bytes()[..16])
    }
}

fn mac(secret: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
}

/// A token taken apart, not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub licence_id: String,
    pub expires: i64,
    mac: Vec<u8>,
}

/// What checking a token found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    Valid,
    Expired,
    Forged,
}

impl Token {
    /// `None` for anything that cannot be a token.
    pub fn parse(raw: &str) -> Option<Self> {
        if raw.len() > MAX_TOKEN_LEN {
            return None;
        }
        let mut parts = raw.split('.');
        let (Some(id), Some(expires), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let id_ok = !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !id_ok || expires.is_empty() || !expires.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mac = URL_SAFE_NO_PAD.decode(mac).ok().filter(|m| m.len() == 32)?;
        Some(Self {
            licence_id: id.to_owned(),
            expires: expires.parse().ok()?,
            mac,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const ID: &str = "6f1c2f9e-3b1a-4c8e-9f00-0123456789ab";

    fn links(base: &Url) -> Links<'_> {
        Links {
            base,
            secret: SECRET,
        }
    }

    #[test]
    fn a_token_is_valid_for_thirty_days_for_its_licence_and_address() {
        let base = Url::parse("https://licences.example.com").expect("url");
        let l = links(&base);
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let raw = l.token(ID, "Buyer@Example.com", now);
        let token = Token::parse(&raw).expect("parses");
        assert_eq!(token.licence_id, ID);
        assert_eq!(l.check(&token, "buyer@example.com", now), Checked::Valid);
        let almost = now + VALIDITY - chrono::Duration::seconds(1);
        assert_eq!(l.check(&token, "buyer@example.com", almost), Checked::Valid);
        assert_eq!(
            l.check(&token, "buyer@example.com", now + VALIDITY),
            Checked::Expired
        );
        assert_eq!(l.check(&token, "other@example.com", now), Checked::Forged);
        let other = Links {
            base: &base,
            secret: b"another secret of thirty-two bytes!!",
        };
        assert_eq!(
            other.check(&token, "buyer@example.com", now),
            Checked::Forged
        );
        // A later expiry under the same MAC is a forgery, not a longer link.
        let (rest, mac) = raw.rsplit_once('.').expect("mac");
        let (id, exp) = rest.split_once('.').expect("expiry");
        let moved = format!("{id}.{}.{mac}", exp.parse::<i64>().expect("n") + 86_400);
        let moved = Token::parse(&moved).expect("parses");
        assert_eq!(
            l.check(&moved, "buyer@example.com", now + VALIDITY),
            Checked::Forged
        );
        assert!(
            l.page_url(ID, "buyer@example.com", now)
                .starts_with("https://licences.example.com/licence/manage?t=")
        );
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        for bad in [
            "",
            "a.b.c",
            "id.123",
            "id.123.AAAA",
            "id.-5.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "i d.5.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "id.5.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.x",
            &"x".repeat(200),
        ] {
            assert_eq!(Token::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn csrf_values_belong_to_one_token_and_one_page() {
        let base = Url::parse("https://licences.example.com").expect("url");
        let l = links(&base);
        let csrf = l.csrf("token-a", "page-1");
        assert!(l.csrf_matches("token-a", "page-1", &csrf));
        assert!(!l.csrf_matches("token-b", "page-1", &csrf));
        assert!(!l.csrf_matches("token-a", "page-2", &csrf));
        assert!(!l.csrf_matches("token-a", "page-1", ""));
        assert!(!l.csrf_matches("token-a", "page-1", "%%%"));
        assert_ne!(
            l.address_key("a@example.com"),
            l.address_key("b@example.com")
        );
        assert_eq!(
            l.address_key(" A@Example.com"),
            l.address_key("a@example.com")
        );
    }
}
