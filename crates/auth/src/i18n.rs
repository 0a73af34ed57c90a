//! Every text auth shows a person, in Italian and English: its pages, their error messages and
//! its mails. One catalogue in code, so that a text missing in one language does not compile.
//!
//! To add a text: a field in [`Texts`] (or an arm in [`error`]) and its value in both [`IT`]
//! and [`EN`]. A text that carries a value names it in braces (`{email}`) and is filled with
//! `str::replace`. Texts are plain text unless their field says HTML.
//!
//! Which language: mails use their recipient's (`auth.user.locale`); a page uses the signed-in
//! user's, else `?lang=it|en`, else the browser's `Accept-Language`, else Italian
//! ([`page_locale`]).

use actix_web::HttpRequest;
use actix_web::http::header;
use diesel::prelude::*;
use pg_store::schema::auth::{session as sessions, user};
use serde::Deserialize;

pub use domain::locale::Locale;

use crate::state::AppState;

/// A mail with a link: subject, opening paragraph, the link's button and the closing line.
pub struct LinkMail {
    pub subject: &'static str,
    pub lead: &'static str,
    pub button: &'static str,
    pub footer: &'static str,
}

/// A mail with a code alone.
pub struct CodeMail {
    pub subject: &'static str,
    pub lead: &'static str,
    pub footer: &'static str,
}

pub struct Texts {
    // Shared by several pages.
    pub email_label: &'static str,
    pub password_label: &'static str,
    pub name_label: &'static str,
    pub min_length_hint: &'static str,
    pub code_label: &'static str,
    pub new_password_label: &'static str,
    pub save_password: &'static str,
    pub signed_out_everywhere_hint: &'static str,
    pub back_to_sign_in: &'static str,
    pub or: &'static str,

    // Sign-in and sign-up.
    pub sign_in_title: &'static str,
    pub sign_in_submit: &'static str,
    pub remember_me: &'static str,
    pub no_account: &'static str,
    pub sign_up_link: &'static str,
    pub sign_up_title: &'static str,
    pub sign_up_submit: &'static str,
    pub have_account: &'static str,
    pub sign_in_link: &'static str,
    pub with_code_link: &'static str,
    pub forgot_link: &'static str,
    pub password_updated: &'static str,
    pub email_confirmed: &'static str,
    pub continue_with_google: &'static str,
    pub passkey_button: &'static str,
    pub passkey_not_found: &'static str,
    pub passkey_failed: &'static str,
    pub passkey_expired: &'static str,
    pub passkey_rate_limited: &'static str,
    pub passkey_other: &'static str,

    // Signing in with a mailed code.
    pub code_title: &'static str,
    /// HTML: `{email}` is the escaped address.
    pub code_sent: &'static str,
    pub send_new_code: &'static str,
    pub with_password: &'static str,
    pub send_me_a_code: &'static str,
    pub code_explained: &'static str,

    // The second step of a sign-in.
    pub two_factor_title: &'static str,
    pub backup_code_label: &'static str,
    pub use_app_code: &'static str,
    pub app_code_label: &'static str,
    pub use_backup_code: &'static str,
    pub trust_device: &'static str,
    pub verify: &'static str,
    pub restart_sign_in: &'static str,

    // A forgotten password.
    pub forgot_title: &'static str,
    pub reset_unavailable: &'static str,
    pub reset_sent: &'static str,
    pub have_code: &'static str,
    pub forgot_intro: &'static str,
    pub send_link: &'static str,
    pub reset_title: &'static str,
    pub request_new_link: &'static str,

    // "This was not me".
    pub not_me_title: &'static str,
    pub not_me_expired: &'static str,
    /// HTML: links to the forgotten-password page.
    pub not_me_expired_next: &'static str,
    pub not_me_explained: &'static str,
    pub end_all_sessions: &'static str,
    pub it_was_me: &'static str,

    // Mails.
    /// Followed by the name and a comma, or by the comma alone.
    pub greeting: &'static str,
    pub or_enter_code: &'static str,
    pub code_note: &'static str,
    pub two_factor_code_note: &'static str,
    pub reset_mail: LinkMail,
    pub verification_mail: LinkMail,
    pub change_email_mail: LinkMail,
    /// `lead` names `{device}` and `{network}`.
    pub new_device_mail: LinkMail,
    pub unknown_network: &'static str,
    pub unknown_browser: &'static str,
    pub some_browser: &'static str,
    /// `{browser}` on `{system}`.
    pub browser_on_system: &'static str,
    pub sign_in_code_mail: CodeMail,
    pub verification_code_mail: CodeMail,
    pub change_email_code_mail: CodeMail,
    pub two_factor_code_mail: CodeMail,
    pub reset_code_mail: CodeMail,
}

pub static IT: Texts = Texts {
    email_label: "E-mail",
    password_label: "Password",
    name_label: "Nome",
    min_length_hint: "(almeno 8 caratteri)",
    code_label: "Codice di 6 cifre",
    new_password_label: "Nuova password",
    save_password: "Salva la password",
    signed_out_everywhere_hint: "Dopo il cambio, tutti i dispositivi collegati verranno disconnessi.",
    back_to_sign_in: "Torna all'accesso",
    or: "oppure",

    sign_in_title: "Accedi",
    sign_in_submit: "Accedi",
    remember_me: "Ricordami su questo dispositivo",
    no_account: "Non hai un account?",
    sign_up_link: "Registrati",
    sign_up_title: "Crea un account",
    sign_up_submit: "Registrati",
    have_account: "Hai già un account?",
    sign_in_link: "Accedi",
    with_code_link: "Accedi con un codice via e-mail",
    forgot_link: "Password dimenticata?",
    password_updated: "Password aggiornata. Accedi con la nuova password.",
    email_confirmed: "Indirizzo e-mail confermato.",
    continue_with_google: "Continua con Google",
    passkey_button: "Accedi con una passkey",
    passkey_not_found: "Questa passkey non è più collegata a un account. Accedi con la password.",
    passkey_failed: "La passkey non è stata riconosciuta. Riprova o accedi con la password.",
    passkey_expired: "La richiesta è scaduta. Riprova.",
    passkey_rate_limited: "Troppi tentativi. Riprova tra qualche minuto.",
    passkey_other: "Accesso con la passkey non riuscito. Riprova o accedi con la password.",

    code_title: "Accedi con un codice",
    code_sent: "Se l'indirizzo <strong>{email}</strong> può ricevere un codice, te lo abbiamo appena inviato. Vale 5 minuti.",
    send_new_code: "Invia un nuovo codice",
    with_password: "Accedi con la password",
    send_me_a_code: "Inviami un codice",
    code_explained: "Ti inviamo un codice di 6 cifre: non serve la password. Se non hai un account, lo creiamo.",

    two_factor_title: "Verifica in due passaggi",
    backup_code_label: "Codice di riserva",
    use_app_code: "Usa il codice dell'app",
    app_code_label: "Codice di 6 cifre dell'app di autenticazione",
    use_backup_code: "Usa un codice di riserva",
    trust_device: "Non chiederlo più su questo dispositivo per 30 giorni",
    verify: "Verifica",
    restart_sign_in: "Ricomincia l'accesso",

    forgot_title: "Password dimenticata",
    reset_unavailable: "Il recupero della password via e-mail non è disponibile. Contatta l'assistenza.",
    reset_sent: "Se l'indirizzo è registrato, riceverai a breve un'e-mail con il link per scegliere una nuova password (vale un'ora) e un codice di 6 cifre (vale 5 minuti).",
    have_code: "Hai il codice? Inseriscilo qui con la nuova password.",
    forgot_intro: "Inserisci l'indirizzo e-mail del tuo account: ti invieremo un link per scegliere una nuova password.",
    send_link: "Invia il link",
    reset_title: "Nuova password",
    request_new_link: "Richiedi un nuovo link",

    not_me_title: "Non sono stato io",
    not_me_expired: "Questo link non è più valido: è scaduto o è già stato usato.",
    not_me_expired_next: "Se pensi che qualcun altro usi il tuo account, <a href=\"/forgot-password\">scegli una nuova password</a>: tutti i dispositivi collegati verranno disconnessi.",
    not_me_explained: "Se non hai effettuato tu l'accesso di cui ti abbiamo scritto, chiudiamo ora tutte le sessioni del tuo account, su ogni dispositivo, e ti chiediamo una nuova password.",
    end_all_sessions: "Chiudi tutte le sessioni",
    it_was_me: "Sono stato io: torna all'app",

    greeting: "Ciao",
    or_enter_code: "Oppure inserisci questo codice nell'app:",
    code_note: "Il codice vale 5 minuti. Non comunicarlo a nessuno.",
    two_factor_code_note: "Il codice vale 3 minuti. Non comunicarlo a nessuno.",
    reset_mail: LinkMail {
        subject: "Reimposta la tua password",
        lead: "abbiamo ricevuto una richiesta di reimpostare la password del tuo account. Per scegliere \
               una nuova password apri questo link entro un'ora:",
        button: "Reimposta la password",
        footer: "Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.",
    },
    verification_mail: LinkMail {
        subject: "Conferma il tuo indirizzo e-mail",
        lead: "per confermare che questo indirizzo e-mail è tuo apri questo link:",
        button: "Conferma l'indirizzo",
        footer: "Se non hai creato tu un account, ignora questa e-mail.",
    },
    change_email_mail: LinkMail {
        subject: "Conferma il tuo nuovo indirizzo e-mail",
        lead: "hai chiesto di usare questo indirizzo per il tuo account. Per confermarlo apri questo link \
               entro un'ora:",
        button: "Conferma il nuovo indirizzo",
        footer: "Se non sei stato tu, ignora questa e-mail: il tuo account resta com'era.",
    },
    new_device_mail: LinkMail {
        subject: "Nuovo accesso al tuo account",
        lead: "qualcuno ha appena effettuato l'accesso al tuo account da un browser e una rete che non \
               avevamo mai visto: {device}, rete {network}. Se sei stato tu, non devi fare nulla. Se non \
               sei stato tu, apri questo link entro 7 giorni: chiuderemo tutte le sessioni e ti \
               chiederemo una nuova password.",
        button: "Non sono stato io",
        footer: "Puoi vedere gli accessi recenti nelle impostazioni dell'app, alla voce Attività.",
    },
    unknown_network: "sconosciuta",
    unknown_browser: "un browser sconosciuto",
    some_browser: "un browser",
    browser_on_system: "{browser} su {system}",
    sign_in_code_mail: CodeMail {
        subject: "Il tuo codice di accesso",
        lead: "ecco il codice per accedere al tuo account:",
        footer: "Se non hai chiesto tu di accedere, ignora questa e-mail.",
    },
    verification_code_mail: CodeMail {
        subject: "Il tuo codice di verifica",
        lead: "ecco il codice per confermare che questo indirizzo e-mail è tuo:",
        footer: "Se non hai creato tu un account, ignora questa e-mail.",
    },
    change_email_code_mail: CodeMail {
        subject: "Il tuo codice per cambiare indirizzo e-mail",
        lead: "ecco il codice per usare questo indirizzo per il tuo account:",
        footer: "Se non sei stato tu, ignora questa e-mail: il tuo account resta com'era.",
    },
    two_factor_code_mail: CodeMail {
        subject: "Il tuo codice di verifica in due passaggi",
        lead: "ecco il codice per completare l'accesso al tuo account:",
        footer: "Se non stai accedendo tu, qualcuno conosce la tua password: cambiala subito.",
    },
    reset_code_mail: CodeMail {
        subject: "Il tuo codice per reimpostare la password",
        lead: "ecco il codice per scegliere una nuova password:",
        footer: "Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.",
    },
};

pub static EN: Texts = Texts {
    email_label: "Email",
    password_label: "Password",
    name_label: "Name",
    min_length_hint: "(at least 8 characters)",
    code_label: "6-digit code",
    new_password_label: "New password",
    save_password: "Save the password",
    signed_out_everywhere_hint: "After the change, every device you are signed in on will be signed out.",
    back_to_sign_in: "Back to sign-in",
    or: "or",

    sign_in_title: "Sign in",
    sign_in_submit: "Sign in",
    remember_me: "Remember me on this device",
    no_account: "No account yet?",
    sign_up_link: "Sign up",
    sign_up_title: "Create an account",
    sign_up_submit: "Sign up",
    have_account: "Already have an account?",
    sign_in_link: "Sign in",
    with_code_link: "Sign in with a code by email",
    forgot_link: "Forgot your password?",
    password_updated: "Password updated. Sign in with your new password.",
    email_confirmed: "Email address confirmed.",
    continue_with_google: "Continue with Google",
    passkey_button: "Sign in with a passkey",
    passkey_not_found: "This passkey no longer belongs to an account. Sign in with your password.",
    passkey_failed: "The passkey was not recognised. Try again or sign in with your password.",
    passkey_expired: "The request has expired. Try again.",
    passkey_rate_limited: "Too many attempts. Try again in a few minutes.",
    passkey_other: "Signing in with the passkey failed. Try again or sign in with your password.",

    code_title: "Sign in with a code",
    code_sent: "If <strong>{email}</strong> can receive a code, we have just sent it. It is valid for 5 minutes.",
    send_new_code: "Send a new code",
    with_password: "Sign in with your password",
    send_me_a_code: "Send me a code",
    code_explained: "We send you a 6-digit code: no password needed. If you have no account, we create one.",

    two_factor_title: "Two-step verification",
    backup_code_label: "Backup code",
    use_app_code: "Use the app's code",
    app_code_label: "6-digit code from your authenticator app",
    use_backup_code: "Use a backup code",
    trust_device: "Don't ask again on this device for 30 days",
    verify: "Verify",
    restart_sign_in: "Start signing in again",

    forgot_title: "Forgot your password?",
    reset_unavailable: "Password recovery by email is not available. Please contact support.",
    reset_sent: "If the address is registered, you will shortly receive an email with a link to choose a new password (valid for one hour) and a 6-digit code (valid for 5 minutes).",
    have_code: "Got the code? Enter it here with your new password.",
    forgot_intro: "Enter your account's email address: we will send you a link to choose a new password.",
    send_link: "Send the link",
    reset_title: "New password",
    request_new_link: "Request a new link",

    not_me_title: "It wasn't me",
    not_me_expired: "This link is no longer valid: it has expired or has already been used.",
    not_me_expired_next: "If you think someone else is using your account, <a href=\"/forgot-password\">choose a new password</a>: every device you are signed in on will be signed out.",
    not_me_explained: "If you did not make the sign-in we wrote to you about, we now end every session of your account, on every device, and ask you for a new password.",
    end_all_sessions: "End every session",
    it_was_me: "It was me: back to the app",

    greeting: "Hello",
    or_enter_code: "Or enter this code in the app:",
    code_note: "The code is valid for 5 minutes. Do not share it with anyone.",
    two_factor_code_note: "The code is valid for 3 minutes. Do not share it with anyone.",
    reset_mail: LinkMail {
        subject: "Reset your password",
        lead: "we received a request to reset your account's password. To choose a new password, \
               open this link within an hour:",
        button: "Reset the password",
        footer: "If this wasn't you, ignore this email: your password stays as it was.",
    },
    verification_mail: LinkMail {
        subject: "Confirm your email address",
        lead: "to confirm that this email address is yours, open this link:",
        button: "Confirm the address",
        footer: "If you did not create an account, ignore this email.",
    },
    change_email_mail: LinkMail {
        subject: "Confirm your new email address",
        lead: "you asked to use this address for your account. To confirm it, open this link within \
               an hour:",
        button: "Confirm the new address",
        footer: "If this wasn't you, ignore this email: your account stays as it was.",
    },
    new_device_mail: LinkMail {
        subject: "New sign-in to your account",
        lead: "someone has just signed in to your account from a browser and network we had never \
               seen: {device}, network {network}. If it was you, there is nothing to do. If it \
               wasn't you, open this link within 7 days: we will end every session and ask you for \
               a new password.",
        button: "It wasn't me",
        footer: "You can see recent sign-ins in the app's settings, under Activity.",
    },
    unknown_network: "unknown",
    unknown_browser: "an unknown browser",
    some_browser: "a browser",
    browser_on_system: "{browser} on {system}",
    sign_in_code_mail: CodeMail {
        subject: "Your sign-in code",
        lead: "here is the code to sign in to your account:",
        footer: "If you did not ask to sign in, ignore this email.",
    },
    verification_code_mail: CodeMail {
        subject: "Your verification code",
        lead: "here is the code to confirm that this email address is yours:",
        footer: "If you did not create an account, ignore this email.",
    },
    change_email_code_mail: CodeMail {
        subject: "Your code to change your email address",
        lead: "here is the code to use this address for your account:",
        footer: "If this wasn't you, ignore this email: your account stays as it was.",
    },
    two_factor_code_mail: CodeMail {
        subject: "Your two-step verification code",
        lead: "here is the code to finish signing in to your account:",
        footer: "If you are not signing in, someone knows your password: change it now.",
    },
    reset_code_mail: CodeMail {
        subject: "Your code to reset your password",
        lead: "here is the code to choose a new password:",
        footer: "If this wasn't you, ignore this email: your password stays as it was.",
    },
};

/// The texts of `locale`.
pub fn texts(locale: Locale) -> &'static Texts {
    match locale {
        Locale::It => &IT,
        Locale::En => &EN,
    }
}

/// What a page says for the error `code` the API sent it back with.
pub fn error(locale: Locale, code: &str) -> &'static str {
    match locale {
        Locale::It => error_it(code),
        Locale::En => error_en(code),
    }
}

fn error_it(code: &str) -> &'static str {
    match code {
        "INVALID_EMAIL_OR_PASSWORD" => "E-mail o password non corretti.",
        "INVALID_EMAIL" => "L'indirizzo e-mail non è valido.",
        "PASSWORD_TOO_SHORT" => "La password deve avere almeno 8 caratteri.",
        "PASSWORD_TOO_LONG" => "La password può avere al massimo 128 caratteri.",
        "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" => {
            "Esiste già un account con questa e-mail. Accedi o usa un'altra e-mail."
        }
        "RATE_LIMITED" => "Troppi tentativi. Riprova tra qualche secondo.",
        "INVALID_CALLBACK_URL" => "L'indirizzo di ritorno non è consentito.",
        "ACCOUNT_NOT_LINKED" => "Esiste già un account con questa e-mail: accedi con la password.",
        "ACCESS_DENIED" => "Accesso con Google annullato.",
        "STATE_MISMATCH" | "STATE_EXPIRED" | "STATE_MISSING" => {
            "La richiesta di accesso è scaduta. Riprova."
        }
        "VALIDATION_ERROR" => "Controlla i dati inseriti.",
        "EMAIL_NOT_VERIFIED" => {
            "Conferma prima il tuo indirizzo e-mail: ti abbiamo inviato un nuovo link."
        }
        "INVALID_TOKEN" => "Il link non è valido o è scaduto. Richiedine uno nuovo.",
        "GOOGLE_EMAIL_NOT_VERIFIED" => {
            "Google non conferma questo indirizzo e-mail: registrati con e-mail e password."
        }
        "EMAIL_DISABLED" => "L'invio di e-mail non è disponibile al momento.",
        "INVALID_OTP" => "Il codice non è corretto o è già stato usato.",
        "OTP_EXPIRED" => "Il codice è scaduto: fatti inviare un nuovo codice.",
        "TOO_MANY_ATTEMPTS" => "Troppi tentativi con questo codice: fatti inviare un nuovo codice.",
        "INVALID_CODE" => "Il codice non è corretto. Usa quello che l'app mostra adesso.",
        "INVALID_BACKUP_CODE" => "Il codice di riserva non è corretto o è già stato usato.",
        "INVALID_TWO_FACTOR_COOKIE" | "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE" => {
            "L'accesso è scaduto o ha avuto troppi tentativi: accedi di nuovo con la password."
        }
        "ACCOUNT_TEMPORARILY_LOCKED" => {
            "Troppi codici sbagliati: l'accesso è bloccato per 15 minuti."
        }
        "INVALID_ORIGIN" | "MISSING_OR_NULL_ORIGIN" => {
            "Richiesta non consentita. Riprova da questa pagina."
        }
        _ => "Qualcosa è andato storto. Riprova.",
    }
}

fn error_en(code: &str) -> &'static str {
    match code {
        "INVALID_EMAIL_OR_PASSWORD" => "Wrong email or password.",
        "INVALID_EMAIL" => "The email address is not valid.",
        "PASSWORD_TOO_SHORT" => "The password must have at least 8 characters.",
        "PASSWORD_TOO_LONG" => "The password can have at most 128 characters.",
        "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" => {
            "An account with this email already exists. Sign in or use another email."
        }
        "RATE_LIMITED" => "Too many attempts. Try again in a few seconds.",
        "INVALID_CALLBACK_URL" => "The return address is not allowed.",
        "ACCOUNT_NOT_LINKED" => {
            "An account with this email already exists: sign in with your password."
        }
        "ACCESS_DENIED" => "Signing in with Google was cancelled.",
        "STATE_MISMATCH" | "STATE_EXPIRED" | "STATE_MISSING" => {
            "The sign-in request has expired. Try again."
        }
        "VALIDATION_ERROR" => "Check what you entered.",
        "EMAIL_NOT_VERIFIED" => "Confirm your email address first: we have sent you a new link.",
        "INVALID_TOKEN" => "The link is not valid or has expired. Ask for a new one.",
        "GOOGLE_EMAIL_NOT_VERIFIED" => {
            "Google does not confirm this email address: sign up with email and password."
        }
        "EMAIL_DISABLED" => "Sending email is not available right now.",
        "INVALID_OTP" => "The code is wrong or has already been used.",
        "OTP_EXPIRED" => "The code has expired: ask for a new one.",
        "TOO_MANY_ATTEMPTS" => "Too many attempts with this code: ask for a new one.",
        "INVALID_CODE" => "The code is wrong. Use the one the app shows now.",
        "INVALID_BACKUP_CODE" => "The backup code is wrong or has already been used.",
        "INVALID_TWO_FACTOR_COOKIE" | "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE" => {
            "The sign-in has expired or had too many attempts: sign in again with your password."
        }
        "ACCOUNT_TEMPORARILY_LOCKED" => {
            "Too many wrong codes: signing in is blocked for 15 minutes."
        }
        "INVALID_ORIGIN" | "MISSING_OR_NULL_ORIGIN" => {
            "Request not allowed. Try again from this page."
        }
        _ => "Something went wrong. Try again.",
    }
}

/// The language a request's browser prefers, by its `Accept-Language`: what a sign-up keeps
/// and what an anonymous page falls back to.
pub fn request_locale(req: &HttpRequest) -> Locale {
    Locale::from_accept_language(
        req.headers()
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    )
}

#[derive(Deserialize)]
struct LangQuery {
    lang: Option<String>,
}

/// `?lang=` when it names one of the languages; anything else is as if absent.
pub fn query_locale(req: &HttpRequest) -> Option<Locale> {
    actix_web::web::Query::<LangQuery>::from_query(req.query_string())
        .ok()?
        .into_inner()
        .lang?
        .parse()
        .ok()
}

/// The language of a page: the signed-in user's, else `?lang=`, else the browser's.
pub async fn page_locale(req: &HttpRequest, state: &AppState) -> Locale {
    match chosen_locale(req, state).await {
        Some(locale) => locale,
        None => request_locale(req),
    }
}

/// The language someone chose: the signed-in user's, else `?lang=`, else the one an earlier
/// page's `?lang=` left in [`LANGUAGE_COOKIE`]; `None` leaves the page to what else it knows of
/// its reader, and then to the browser.
pub async fn chosen_locale(req: &HttpRequest, state: &AppState) -> Option<Locale> {
    match signed_in_locale(req, state).await {
        Some(locale) => Some(locale),
        None => query_locale(req).or_else(|| cookie_locale(req)),
    }
}

/// Where a page's `?lang=` is kept (under the product's cookie prefix, signed like its other
/// helper cookies), so that the links, forms and redirects after it (sign-in to sign-up, to the
/// forgotten password) stay in that language without each carrying it. A language is no
/// personal data; a value this version does not know is ignored.
pub const LANGUAGE_COOKIE: &str = "lang";
const LANGUAGE_COOKIE_SECS: i64 = 365 * 24 * 3600;

fn cookie_locale(req: &HttpRequest) -> Option<Locale> {
    let state = req.app_data::<actix_web::web::Data<AppState>>()?;
    let name = session::cookie::cookie_name(&state.settings.auth, LANGUAGE_COOKIE);
    session::cookie::get_signed(
        &state.settings.auth,
        &session::guard::cookie_header(req),
        &name,
    )?
    .parse()
    .ok()
}

/// Middleware of the pages: a valid `?lang=` is answered with [`LANGUAGE_COOKIE`] set to it for
/// a year.
pub async fn remember_chosen_language(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    let chosen = query_locale(req.request());
    let settings = req
        .app_data::<actix_web::web::Data<AppState>>()
        .map(|state| state.settings.clone());
    let mut resp = next.call(req).await?;
    if let (Some(locale), Some(settings)) = (chosen, settings) {
        let name = session::cookie::cookie_name(&settings.auth, LANGUAGE_COOKIE);
        let cookie = session::cookie::set_signed(
            &settings.auth,
            &name,
            locale.as_str(),
            LANGUAGE_COOKIE_SECS,
        );
        if let Ok(value) = header::HeaderValue::from_str(&cookie) {
            resp.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    Ok(resp)
}

/// The language of the user whose valid session the request carries, if any. Only read: a page
/// renews nothing, and a database that does not answer just leaves the page to the other rules.
async fn signed_in_locale(req: &HttpRequest, state: &AppState) -> Option<Locale> {
    let token = session::cookie::token_from_header(
        &state.settings.auth,
        &session::guard::cookie_header(req),
    )?;
    let stored = state
        .db
        .read(move |conn| {
            sessions::table
                .inner_join(user::table)
                .filter(sessions::token.eq(token))
                .filter(sessions::expires_at.gt(chrono::Utc::now()))
                .select(user::locale)
                .first::<String>(conn)
                .optional()
        })
        .await
        .ok()??;
    stored.parse().ok()
}

/// The language of a page opened from a mailed link: the reader's choice, else the language of
/// the account the link's live token belongs to (the one its mail was written in), else the
/// browser's.
pub async fn link_locale(
    req: &HttpRequest,
    state: &AppState,
    purpose: crate::links::Purpose,
    token: &str,
) -> Locale {
    if let Some(chosen) = chosen_locale(req, state).await {
        return chosen;
    }
    let token = token.to_owned();
    let owner = state
        .db
        .read(
            move |conn| match crate::links::peek(conn, purpose, &token, chrono::Utc::now())? {
                Some(user_id) => user_locale(conn, &user_id).map(Some),
                None => Ok(None),
            },
        )
        .await
        .ok()
        .flatten();
    owner.unwrap_or_else(|| request_locale(req))
}

/// The stored language of `user_id`; Italian for a user that is gone or a value this version
/// does not know.
pub fn user_locale(conn: &mut crate::repo::Tx, user_id: &session::UserId) -> QueryResult<Locale> {
    let stored: Option<String> = user::table
        .find(user_id)
        .select(user::locale)
        .first(conn)
        .optional()?;
    Ok(stored.and_then(|l| l.parse().ok()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_reads_differently_in_each_language() {
        for code in [
            "INVALID_EMAIL_OR_PASSWORD",
            "INVALID_EMAIL",
            "RATE_LIMITED",
            "INVALID_OTP",
            "ACCOUNT_TEMPORARILY_LOCKED",
            "SOMETHING_ELSE",
        ] {
            assert_ne!(error(Locale::It, code), error(Locale::En, code), "{code}");
        }
    }

    #[test]
    fn placeholders_are_in_both_languages() {
        for t in [&IT, &EN] {
            assert!(t.code_sent.contains("{email}"));
            assert!(t.new_device_mail.lead.contains("{device}"));
            assert!(t.new_device_mail.lead.contains("{network}"));
            assert!(t.browser_on_system.contains("{browser}"));
            assert!(t.browser_on_system.contains("{system}"));
        }
    }
}
