use std::time::Duration;

use push::{Sender, VapidConfig, VapidKeyPair};
use service_kit::Secret;
use testkit::push_service::FakePushService;

pub const TTL: Duration = Duration::from_secs(3600);

pub fn vapid() -> VapidConfig {
    let pair = VapidKeyPair::generate();
    VapidConfig {
        public_key: pair.public_key,
        private_key: Secret::new(pair.private_key.expose()),
        subject: "mailto:ops@example.com".to_owned(),
    }
}

/// A sender for the fake service, which listens on plain HTTP on 127.0.0.1.
pub fn sender() -> Sender {
    Sender::new(vapid(), true).expect("sender")
}

pub async fn service() -> FakePushService {
    FakePushService::start().await
}
