//! What every handler shares.

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::lease::SigningRing;
use crate::releases::Builds;
use crate::settings::Settings;
use crate::tokens::KeyRing;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub clock: SharedClock,
    pub keys: Arc<KeyRing>,
    pub signing: Arc<SigningRing>,
    pub builds: Builds,
    /// The e-mail sender, woken after a purchase queues a mail.
    pub mail: mailer::Mailer,
    /// The requests this replica holds of each address's rate-limit window.
    pub permits: Arc<super::limits::Permits>,
}
