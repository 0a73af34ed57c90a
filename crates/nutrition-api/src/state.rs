//! What the handlers share.

use std::sync::Arc;

use domain::recipes::Catalogue;
use nutrition_store::PgPool;

use crate::settings::Settings;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: PgPool,
    /// The recipes shipped with the product, loaded and checked at start-up.
    pub catalogue: Arc<Catalogue>,
    /// `None` when push is switched off (no VAPID keys).
    pub push: Option<push::Sender>,
}
