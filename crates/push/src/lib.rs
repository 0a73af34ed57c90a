//! Web Push for the product: VAPID configuration (RFC 8292), subscription and endpoint checks,
//! and delivery with every outcome classified of messages that the `web-push` crate builds
//! (aes128gcm encryption of RFC 8291 and the VAPID signature); see `sender` and `jwt`.

pub mod endpoint;
mod jwt;
pub mod sender;
pub mod settings;
pub mod subscription;
pub mod vapid;

pub use endpoint::{
    EndpointError, EndpointPolicy, KNOWN_PUSH_HOSTS, PUSH_ENDPOINT_HOSTS, check_endpoint,
    is_public_ip, registrable_domain,
};
pub use jwt::{REFRESH_BEFORE, TOKEN_LIFETIME};
pub use sender::{
    MAX_PAYLOAD, Options, Outcome, Reached, SendSetupError, Sender, SenderOptions, Topic, Urgency,
};
pub use settings::PushSettings;
pub use subscription::{KeyError, Subscription, check_keys};
pub use vapid::{VapidConfig, VapidKeyPair};
