//! What the handlers share.

use std::sync::Arc;

use actix_web::HttpRequest;
use chrono::Utc;

use crate::error::ApiError;
use crate::password::HashPool;
use crate::repo::{Db, Tx, rate_limits};
use crate::settings::Settings;
use crate::settings::{RateLimit, SignInLimits};
use crate::{client, keys};

/// Reset and verification mails one e-mail address may be sent in a day, whoever asks.
pub const MAILS_PER_ADDRESS_PER_DAY: RateLimit = RateLimit {
    max: 10,
    window_secs: 86_400,
};

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub db: Db,
    /// Verified against when an e-mail address is unknown (see `password::decoy`).
    pub decoy_hash: Arc<str>,
    /// Computes every password hash of a request, bounded in parallelism and memory.
    pub hashes: HashPool,
    /// For the OAuth provider: connection reuse and a time-out.
    pub http: reqwest::Client,
    /// The e-mail sender; `None` without `SMTP_URL`.
    pub mailer: Option<mailer::Mailer>,
    /// The passkeys' relying party; `None` when `AUTH_BASE_URL`'s host is an IP address.
    pub passkeys: Option<Arc<webauthn_rs::prelude::Webauthn>>,
}

impl AppState {
    /// Whether `plain` is the password of `user_id`; `None` when the account has none (one that
    /// signs in with Google or by code only). Costs a hash on the bounded pool.
    pub async fn password_matches(
        &self,
        user_id: &session::UserId,
        plain: String,
    ) -> Result<Option<bool>, ApiError> {
        let lookup = user_id.clone();
        let stored = self
            .db
            .read(move |conn| crate::repo::accounts::password_of(conn, &lookup))
            .await?;
        let Some(Some(stored)) = stored else {
            return Ok(None);
        };
        Ok(Some(self.hashes.verify(plain, stored.into()).await?))
    }

    /// Opens the session of a sign-in, recorded in the account's activity with the new-device
    /// mail when one is due ([`crate::activity::signed_in`]).
    pub async fn open_session(
        &self,
        req: &HttpRequest,
        user: &session::User,
        remember: bool,
    ) -> Result<session::Session, ApiError> {
        let origin = crate::client::origin(req, &self.settings.trusted_proxies);
        let base_url = self.settings.auth.base_url.clone();
        let user_id = user.id.clone();
        let (session, mailed) = self
            .db
            .write(move |conn| {
                crate::activity::signed_in(conn, &user_id, remember, &origin, &base_url, Utc::now())
            })
            .await?;
        if mailed {
            self.wake_mailer();
        }
        Ok(session)
    }

    /// The account's password is `plain`, or better-auth's 400 `INVALID_PASSWORD` (also for an
    /// account without one). Counted against the user's budget of password checks; a right
    /// one makes the session fresh for a while ([`session::Session::is_fresh`]).
    pub async fn confirm_password(
        &self,
        req: &HttpRequest,
        me: &session::CurrentUser,
        plain: String,
    ) -> Result<(), ApiError> {
        self.limit(
            req,
            "password-check",
            Some(("user", me.user.id.as_str())),
            self.settings.rate_limit,
        )
        .await?;
        match self.password_matches(&me.user.id, plain).await? {
            Some(true) => self.prove(&me.session.id).await,
            _ => Err(ApiError::bad("INVALID_PASSWORD")),
        }
    }

    /// Records that the owner of session `id` just proved who they are on it (a password or a
    /// code), which keeps the session fresh for a while ([`session::Session::is_fresh`]).
    pub async fn prove(&self, id: &session::SessionId) -> Result<(), ApiError> {
        let id = id.clone();
        self.db
            .read(move |conn| session::store::prove(conn, &id, Utc::now()))
            .await
            .map(drop)
    }

    /// The client of `req` as an activity event keeps it.
    pub fn activity_client(&self, req: &HttpRequest) -> session::activity::Client {
        session::activity::Client::new(
            crate::client::ip(req, &self.settings.trusted_proxies),
            crate::client::user_agent(req).as_deref(),
        )
    }

    /// The e-mailed codes, checked against this service's database with its secret.
    pub fn codes(&self) -> crate::otp::Codes<'_> {
        crate::otp::Codes {
            db: &self.db,
            secret: self.settings.auth.secret.expose(),
        }
    }

    /// Whether mail can be sent: the routes and pages that need it check this first.
    pub fn email_enabled(&self) -> bool {
        self.mailer.is_some()
    }

    /// 503 `EMAIL_DISABLED` unless mail can be sent.
    pub fn require_email(&self) -> Result<(), ApiError> {
        if self.email_enabled() {
            Ok(())
        } else {
            Err(ApiError::EmailDisabled)
        }
    }

    /// Asks the sender to look at the outbox now; call it after committing a queued mail.
    pub fn wake_mailer(&self) {
        if let Some(mailer) = &self.mailer {
            mailer.wake();
        }
    }

    /// Counts an attempt at `route` against the client's address and, when known, the e-mail
    /// address; 429 when either is over the limit.
    pub async fn rate_limit(
        &self,
        req: &HttpRequest,
        route: &'static str,
        email: Option<&str>,
    ) -> Result<(), ApiError> {
        self.limit(
            req,
            route,
            email.map(|e| ("email", e)),
            self.settings.rate_limit,
        )
        .await
    }

    /// Counts a started Google sign-in against the client's address and against all of them,
    /// each within the lifetime of a state row, so that the rows pending at any time are bounded
    /// (at most twice each budget, where two windows meet).
    pub async fn social_start_gate(&self, req: &HttpRequest) -> Result<(), ApiError> {
        let secret = self.settings.auth.secret.expose();
        let budget = self.settings.social_pending;
        let window_secs = u32::try_from(crate::routes::social::STATE_LIFETIME_SECS).unwrap_or(600);
        let per_address = RateLimit {
            max: budget.per_address,
            window_secs,
        };
        let total = RateLimit {
            max: budget.total,
            window_secs,
        };
        let network = self.client_network(req).unwrap_or_default();
        let address = keys::rate_limit_key(secret, "sign-in-social", "ip", &network);
        let all = keys::rate_limit_key(secret, "sign-in-social", "all", "");
        self.db
            .read(move |conn| {
                let mut refusal = Refusal::default();
                if let Err(secs) = rate_limits::hit(conn, &address, per_address)? {
                    refusal.note(secs, "address", per_address);
                }
                // Refused at the address already: not counted against everyone.
                if refusal.0.is_none()
                    && let Err(secs) = rate_limits::hit(conn, &all, total)?
                {
                    refusal.note(secs, "all", total);
                }
                refusal.into_result()
            })
            .await
    }

    /// Counts an attempt at `route` against the client's address and `subject` (a kind and a
    /// value, such as the e-mail address or the user id) under `limit`. Both counters count
    /// every attempt, even when the first is already over the limit. Keys are stored as keyed
    /// hashes, so the table never holds an address.
    pub async fn limit(
        &self,
        req: &HttpRequest,
        route: &'static str,
        subject: Option<(&'static str, &str)>,
        limit: RateLimit,
    ) -> Result<(), ApiError> {
        let secret = self.settings.auth.secret.expose();
        let mut keys = Vec::with_capacity(2);
        if let Some(network) = self.client_network(req) {
            keys.push((
                "address",
                keys::rate_limit_key(secret, route, "ip", &network),
            ));
        }
        if let Some((kind, value)) = subject {
            keys.push((kind, keys::rate_limit_key(secret, route, kind, value)));
        }
        self.db
            .read(move |conn| {
                let mut refusal = Refusal::default();
                for (scope, key) in keys {
                    if let Err(secs) = rate_limits::hit(conn, &key, limit)? {
                        refusal.note(secs, scope, limit);
                    }
                }
                refusal.into_result()
            })
            .await
    }

    /// Whether one more reset or verification mail may go to `email` today: at most
    /// [`MAILS_PER_ADDRESS_PER_DAY`], whoever asks. Counted per request (whether or not the
    /// address has an account, so the answer and its time tell nothing); the request itself is
    /// answered as usual either way, so that nobody can make someone else's request fail. The
    /// limit on refusals is each client's own (`limit` without an e-mail subject).
    pub async fn mail_allowed(&self, email: &str) -> Result<bool, ApiError> {
        let key = keys::rate_limit_key(
            self.settings.auth.secret.expose(),
            "mail-day",
            "email",
            email,
        );
        self.db
            .read(move |conn| {
                Ok::<_, ApiError>(rate_limits::hit(conn, &key, MAILS_PER_ADDRESS_PER_DAY)?.is_ok())
            })
            .await
    }

    /// Counts an attempt at `route` against the budget every client shares (`scope: "all"`).
    /// Called only once the client's own limits passed, so that one client refused by them can
    /// never spend what everyone shares.
    pub async fn global_limit(
        &self,
        route: &'static str,
        limit: RateLimit,
    ) -> Result<(), ApiError> {
        let key = keys::rate_limit_key(self.settings.auth.secret.expose(), route, "all", "");
        self.db
            .read(move |conn| count_shared(conn, &key, limit))
            .await
    }

    /// The client's address as a rate-limit subject: an IPv6 address counts as its /64, the
    /// block one subscriber usually holds whole, so that walking through it gains nothing.
    fn client_network(&self, req: &HttpRequest) -> Option<String> {
        client::ip(req, &self.settings.trusted_proxies).map(client::network)
    }

    /// The checks before a sign-in's password is verified. First the client's own, in one
    /// statement: the per-address limit counts this attempt; the failure budgets of the address
    /// and of the e-mail address are only read. Only an attempt that passes them counts against
    /// the global budget, so that one client refused by its own limit can never spend the budget
    /// everyone shares. The work is the same whether or not the e-mail address belongs to anyone.
    /// When all pass, `then` runs on the same connection, so that what the sign-in reads next
    /// costs no second hand-off to the blocking pool.
    pub async fn sign_in_gate<T, F>(
        &self,
        req: &HttpRequest,
        email: &str,
        then: F,
    ) -> Result<(SignInFailureKeys, T), ApiError>
    where
        F: FnOnce(&mut Tx) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let secret = self.settings.auth.secret.expose();
        let limits = self.settings.sign_in;
        let per_address = self.settings.rate_limit;
        let network = self.client_network(req).unwrap_or_default();
        let global = keys::rate_limit_key(secret, "sign-in", "all", "");
        let address = keys::rate_limit_key(secret, "sign-in", "ip", &network);
        let failures = SignInFailureKeys {
            pair: keys::rate_limit_key(
                secret,
                "sign-in-failure",
                "ip+email",
                &format!("{network}\n{email}"),
            ),
            email: keys::rate_limit_key(secret, "sign-in-failure", "email", email),
            limits,
        };
        let (pair, by_email) = (failures.pair.clone(), failures.email.clone());
        let found = self
            .db
            .read(move |conn| {
                let gate = rate_limits::count_one_read_two(
                    conn,
                    (&address, per_address),
                    [
                        (&pair, limits.failures_per_address.window_secs),
                        (&by_email, limits.failures_per_email.window_secs),
                    ],
                )?;
                let mut refusal = Refusal::default();
                if let Err(secs) = gate.counted {
                    refusal.note(secs, "address", per_address);
                }
                match gate.read {
                    [Some((n, secs)), _] if n >= limits.failures_per_address.max => {
                        refusal.note(secs, "address+email", limits.failures_per_address);
                    }
                    // Spent from many places: refused only where it already failed, so that the
                    // person, signing in from somewhere else, is not locked out.
                    [Some(_), Some((n, secs))] if n >= limits.failures_per_email.max => {
                        refusal.note(secs, "email-failures", limits.failures_per_email);
                    }
                    _ => {}
                }
                refusal.into_result()?;
                count_shared(conn, &global, limits.global)?;
                then(conn)
            })
            .await?;
        Ok((failures, found))
    }

    /// Counts a failed sign-in against the address and the e-mail address, and records it in
    /// the activity of the account with that address, if there is one: with the same
    /// statements either way, so that the work tells no one which addresses have accounts.
    pub async fn sign_in_failed(
        &self,
        req: &HttpRequest,
        email: &str,
        keys: SignInFailureKeys,
    ) -> Result<(), ApiError> {
        let client = self.activity_client(req);
        let email = email.to_owned();
        self.db
            .read(move |conn| {
                // Counted whatever the counts are: the gate decides on them.
                let _ = rate_limits::hit(conn, &keys.pair, keys.limits.failures_per_address)?;
                let _ = rate_limits::hit(conn, &keys.email, keys.limits.failures_per_email)?;
                crate::activity::failed_sign_in(conn, &email, &client, Utc::now())?;
                Ok::<_, ApiError>(())
            })
            .await
    }
}

/// Counts an attempt against a budget every client shares (`scope: "all"`).
fn count_shared(conn: &mut Tx, key: &str, limit: RateLimit) -> Result<(), ApiError> {
    let mut refusal = Refusal::default();
    if let Err(secs) = rate_limits::hit(conn, key, limit)? {
        refusal.note(secs, "all", limit);
    }
    refusal.into_result()
}

/// The failure counters of one sign-in, for [`AppState::sign_in_failed`].
pub struct SignInFailureKeys {
    pair: String,
    email: String,
    limits: SignInLimits,
}

/// The refusal with the longest wait among the limits one request exceeded.
#[derive(Default)]
struct Refusal(Option<(u64, &'static str, RateLimit)>);

impl Refusal {
    fn note(&mut self, secs: u64, scope: &'static str, limit: RateLimit) {
        if self.0.is_none_or(|(longest, _, _)| secs > longest) {
            self.0 = Some((secs, scope, limit));
        }
    }

    fn into_result(self) -> Result<(), ApiError> {
        match self.0 {
            None => Ok(()),
            Some((retry_after, scope, limit)) => Err(ApiError::RateLimited {
                retry_after,
                scope,
                max: limit.max,
                window_secs: limit.window_secs,
            }),
        }
    }
}
