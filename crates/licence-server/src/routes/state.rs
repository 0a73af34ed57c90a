//! What every handler shares.

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::db::MyPool;
use crate::mail::MailWaker;
use crate::releases::Builds;
use crate::settings::Settings;
use crate::tokens::KeyRing;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: MyPool,
    pub clock: SharedClock,
    pub keys: Arc<KeyRing>,
    pub builds: Builds,
    pub mail: MailWaker,
}
