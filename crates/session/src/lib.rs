//! What every service needs to recognise a signed-in user: the auth settings that auth and
//! nutrition-api must share, the signed session cookie, session rows with expiry and rolling
//! refresh, the request guard that answers 401, and the trusted-origin check that answers 403.

pub mod activity;
pub mod cookie;
pub mod guard;
pub mod ids;
pub mod model;
pub mod origin;
pub mod settings;
pub mod store;

pub use guard::{CurrentUser, MaybeSession, SessionError, SessionLayer, SessionToken};
pub use ids::{SessionId, UserId};
pub use model::{Session, User};
pub use settings::AuthSettings;
