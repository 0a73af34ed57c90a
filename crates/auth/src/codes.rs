//! better-auth's error codes and their English messages (its `BASE_ERROR_CODES`), so that a
//! client written for better-auth shows the texts it expects.

/// The message better-auth sends with `code`.
pub fn message(code: &str) -> &'static str {
    match code {
        "USER_NOT_FOUND" => "User not found",
        "INVALID_PASSWORD" => "Invalid password",
        "INVALID_EMAIL" => "Invalid email",
        "INVALID_EMAIL_OR_PASSWORD" => "Invalid email or password",
        "INVALID_TOKEN" => "Invalid token",
        "TOKEN_EXPIRED" => "Token expired",
        "EMAIL_NOT_VERIFIED" => "Email not verified",
        "PASSWORD_TOO_SHORT" => "Password too short",
        "PASSWORD_TOO_LONG" => "Password too long",
        "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" => "User already exists. Use another email.",
        "EMAIL_CAN_NOT_BE_UPDATED" => "Email can not be updated",
        "CREDENTIAL_ACCOUNT_NOT_FOUND" => "Credential account not found",
        "SESSION_EXPIRED" => "Session expired. Re-authenticate to perform this action.",
        "FAILED_TO_UNLINK_LAST_ACCOUNT" => "You can't unlink your last account",
        "ACCOUNT_NOT_FOUND" => "Account not found",
        "CROSS_SITE_NAVIGATION_LOGIN_BLOCKED" => {
            "Cross-site navigation login blocked. This request appears to be a CSRF attack."
        }
        "EMAIL_ALREADY_VERIFIED" => "Email is already verified",
        "EMAIL_MISMATCH" => "Email mismatch",
        "INVALID_ORIGIN" => "Invalid origin",
        "INVALID_CALLBACK_URL" => "Invalid callbackURL",
        "INVALID_REDIRECT_URL" => "Invalid redirectURL",
        "MISSING_OR_NULL_ORIGIN" => "Missing or null Origin",
        "VALIDATION_ERROR" => "Validation Error",
        "NO_FIELDS_TO_UPDATE" => "No fields to update",
        "INVALID_OTP" => "Invalid OTP",
        "OTP_EXPIRED" => "OTP expired",
        "TOO_MANY_ATTEMPTS" => "Too many attempts",
        "OTP_NOT_CONFIGURED" => "OTP is not available",
        "TOTP_ALREADY_ENABLED" => "TOTP is already enabled",
        "TOTP_NOT_ENABLED" => "TOTP not enabled",
        "TWO_FACTOR_NOT_ENABLED" => "Two factor isn't enabled",
        "BACKUP_CODES_NOT_ENABLED" => "Backup codes aren't enabled",
        "INVALID_BACKUP_CODE" => "Invalid backup code",
        "INVALID_CODE" => "Invalid code",
        "OTP_HAS_EXPIRED" => "OTP has expired",
        "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE" => "Too many attempts. Please request a new code.",
        "INVALID_TWO_FACTOR_COOKIE" => "Invalid two factor cookie",
        "ACCOUNT_TEMPORARILY_LOCKED" => {
            "Too many failed verification attempts. Your account is temporarily locked. Please try again later."
        }
        "SESSION_NOT_FRESH" => "Session is not fresh",
        "CHALLENGE_NOT_FOUND" => "Challenge not found",
        "YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY" => {
            "You are not allowed to register this passkey"
        }
        "FAILED_TO_VERIFY_REGISTRATION" => "Failed to verify registration",
        "PASSKEY_NOT_FOUND" => "Passkey not found",
        "AUTHENTICATION_FAILED" => "Authentication failed",
        "PREVIOUSLY_REGISTERED" => "Previously registered",
        // Ours: better-auth sets no limit and needs no host name.
        "TOO_MANY_PASSKEYS" => "This account holds as many passkeys as it may",
        "PASSKEYS_UNAVAILABLE" => "Passkeys need the server's address to be a host name",
        _ => "Bad request",
    }
}
