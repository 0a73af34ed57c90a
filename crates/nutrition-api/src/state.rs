//! What the handlers share.

use std::sync::Arc;

use nutrition_store::PgPool;

use crate::settings::Settings;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: PgPool,
}
