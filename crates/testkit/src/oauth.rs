//! A local OAuth 2.0 provider speaking Google's authorization-code flow with PKCE, so that the
//! whole sign-in runs for real in tests: authorize (redirect with a code), token (checks client
//! credentials, redirect URI and the S256 code verifier; a code works once) and userinfo.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Who signs in at the provider.
#[derive(Debug, Clone, Serialize)]
pub struct Identity {
    pub sub: String,
    pub email: String,
    pub email_verified: bool,
    pub name: String,
    pub picture: Option<String>,
}

#[derive(Debug, Clone)]
struct Grant {
    challenge: String,
    redirect_uri: String,
    identity: Identity,
}

#[derive(Default)]
struct State {
    identity: Option<Identity>,
    grants: HashMap<String, Grant>,
    tokens: HashMap<String, Identity>,
    token_requests: usize,
}

pub struct FakeOAuth {
    pub base: String,
    pub client_id: String,
    pub client_secret: String,
    state: Arc<Mutex<State>>,
}

impl FakeOAuth {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state: Arc<Mutex<State>> = Arc::default();
        let client_id = "test-client-id".to_owned();
        let client_secret = "test-client-secret".to_owned();
        let data = web::Data::new(Shared {
            state: Arc::clone(&state),
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
        });
        crate::http::serve(listener, 1, move |cfg| {
            cfg.app_data(data.clone())
                .route("/authorize", web::get().to(authorize))
                .route("/token", web::post().to(token))
                .route("/userinfo", web::get().to(userinfo));
        });
        Self {
            base: format!("http://127.0.0.1:{port}"),
            client_id,
            client_secret,
            state,
        }
    }

    /// The user who will "sign in" on the next authorization.
    pub fn sign_in_as(&self, identity: Identity) {
        if let Ok(mut s) = self.state.lock() {
            s.identity = Some(identity);
        }
    }

    /// How many token requests arrived (accepted or not).
    pub fn token_requests(&self) -> usize {
        self.state.lock().map(|s| s.token_requests).unwrap_or(0)
    }

    /// The environment for auth that points Google sign-in here.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GOOGLE_CLIENT_ID".into(), self.client_id.clone()),
            ("GOOGLE_CLIENT_SECRET".into(), self.client_secret.clone()),
            ("GOOGLE_AUTH_URL".into(), format!("{}/authorize", self.base)),
            ("GOOGLE_TOKEN_URL".into(), format!("{}/token", self.base)),
            (
                "GOOGLE_USERINFO_URL".into(),
                format!("{}/userinfo", self.base),
            ),
        ]
    }
}

struct Shared {
    state: Arc<Mutex<State>>,
    client_id: String,
    client_secret: String,
}

fn random() -> String {
    use rand::Rng;
    let bytes: [u8; 24] = rand::rng().random();
    URL_SAFE_NO_PAD.encode(bytes)
}

fn bad(msg: &str) -> HttpResponse {
    HttpResponse::BadRequest()
        .json(serde_json::json!({ "error": "invalid_request", "error_description": msg }))
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    response_type: String,
    client_id: String,
    redirect_uri: String,
    state: String,
    code_challenge: String,
    code_challenge_method: String,
    scope: String,
}

async fn authorize(shared: web::Data<Shared>, q: web::Query<AuthorizeQuery>) -> HttpResponse {
    if q.response_type != "code"
        || q.client_id != shared.client_id
        || q.code_challenge_method != "S256"
    {
        return bad("unsupported request");
    }
    if !q.scope.split(' ').any(|s| s == "email") {
        return bad("the email scope is required");
    }
    let Ok(mut s) = shared.state.lock() else {
        return HttpResponse::InternalServerError().finish();
    };
    let Some(identity) = s.identity.clone() else {
        return bad("no identity configured");
    };
    let code = random();
    s.grants.insert(
        code.clone(),
        Grant {
            challenge: q.code_challenge.clone(),
            redirect_uri: q.redirect_uri.clone(),
            identity,
        },
    );
    let mut target = match url::Url::parse(&q.redirect_uri) {
        Ok(u) => u,
        Err(_) => return bad("bad redirect_uri"),
    };
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q.state);
    HttpResponse::Found()
        .insert_header(("Location", target.to_string()))
        .finish()
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: String,
    code: String,
    redirect_uri: String,
    client_id: String,
    client_secret: String,
    code_verifier: String,
}

async fn token(shared: web::Data<Shared>, form: web::Form<TokenForm>) -> HttpResponse {
    let Ok(mut s) = shared.state.lock() else {
        return HttpResponse::InternalServerError().finish();
    };
    s.token_requests += 1;
    if form.grant_type != "authorization_code"
        || form.client_id != shared.client_id
        || form.client_secret != shared.client_secret
    {
        return HttpResponse::Unauthorized().json(serde_json::json!({ "error": "invalid_client" }));
    }
    // A code is single use, whatever the outcome.
    let Some(grant) = s.grants.remove(&form.code) else {
        return bad("unknown or used code");
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(form.code_verifier.as_bytes()));
    if grant.redirect_uri != form.redirect_uri || grant.challenge != challenge {
        return bad("redirect_uri or code_verifier does not match");
    }
    let access = random();
    s.tokens.insert(access.clone(), grant.identity);
    HttpResponse::Ok().json(serde_json::json!({
        "access_token": access,
        "id_token": "header.payload.signature",
        "token_type": "Bearer",
        "expires_in": 3599,
        "scope": "openid email profile",
    }))
}

async fn userinfo(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let Ok(s) = shared.state.lock() else {
        return HttpResponse::InternalServerError().finish();
    };
    match token.and_then(|t| s.tokens.get(&t).cloned()) {
        Some(identity) => HttpResponse::Ok().json(identity),
        None => HttpResponse::Unauthorized().finish(),
    }
}
