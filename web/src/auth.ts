import { createAuthClient } from 'better-auth/client';
import { twoFactorClient } from 'better-auth/client/plugins';
import { passkeyClient } from '@better-auth/passkey/client';

/** better-auth's own client, on the app's origin (auth is routed at /api/auth by nginx). */
export const authClient = createAuthClient({ baseURL: location.origin, plugins: [twoFactorClient(), passkeyClient()] });

export interface AuthFailure {
  code?: string | undefined;
  message?: string | undefined;
  status: number;
}

const TEXTS: Record<string, string> = {
  INVALID_PASSWORD: 'La password non è corretta.',
  PASSWORD_TOO_SHORT: 'La nuova password deve avere almeno 8 caratteri.',
  PASSWORD_TOO_LONG: 'La nuova password può avere al massimo 128 caratteri.',
  EMAIL_DISABLED: "L'invio di e-mail non è attivo su questo server.",
  SESSION_EXPIRED: 'Per sicurezza inserisci la password.',
  RATE_LIMITED: 'Troppi tentativi: riprova tra poco.',
  INVALID_CODE: "Il codice non è corretto: usa quello che l'app mostra adesso.",
  TOTP_ALREADY_ENABLED: 'La verifica in due passaggi è già attiva.',
  SESSION_NOT_FRESH: 'Per sicurezza conferma la password.',
  // Passkeys: auth's answers, and those of the browser's ceremony as the passkey client names them.
  PASSKEY_NOT_FOUND: 'Questa passkey non esiste più: ricarica la pagina.',
  PASSKEYS_UNAVAILABLE: 'Le passkey non sono disponibili su questo server.',
  TOO_MANY_PASSKEYS: "Hai già il numero massimo di passkey: eliminane una prima di aggiungerne un'altra.",
  PREVIOUSLY_REGISTERED: 'Questo dispositivo ha già una passkey per il tuo account.',
  ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED: 'Questo dispositivo ha già una passkey per il tuo account.',
  ERROR_CEREMONY_ABORTED: 'Passkey non aggiunta: la richiesta è stata annullata.',
  ERROR_PASSTHROUGH_SEE_CAUSE_PROPERTY: 'Passkey non aggiunta: la richiesta è stata annullata o è scaduta.',
  CHALLENGE_NOT_FOUND: 'È passato troppo tempo: riprova.',
  FAILED_TO_VERIFY_REGISTRATION: 'Non siamo riusciti a verificare la passkey: riprova.',
  ERROR_INVALID_DOMAIN: 'Le passkey non funzionano a questo indirizzo del sito.',
  ERROR_INVALID_RP_ID: 'Le passkey non funzionano a questo indirizzo del sito.',
  ERROR_AUTHENTICATOR_MISSING_USER_VERIFICATION_SUPPORT: 'Questo dispositivo non può proteggere una passkey con impronta, volto o PIN: prova con un altro.',
  ERROR_AUTHENTICATOR_MISSING_DISCOVERABLE_CREDENTIAL_SUPPORT: 'Questo dispositivo non può conservare una passkey: prova con un altro.',
  ERROR_AUTHENTICATOR_NO_SUPPORTED_PUBKEYCREDPARAMS_ALG: 'Questo dispositivo non può creare una passkey adatta: prova con un altro.',
  ERROR_AUTHENTICATOR_GENERAL_ERROR: 'Il dispositivo non è riuscito a creare la passkey: riprova.',
  UNKNOWN_ERROR: 'Qualcosa non ha funzionato con la passkey: riprova.',
};

/** Turns better-auth's `{data, error}` into a value or an Italian error. */
export function unwrap<T>(res: { data: T | null; error: AuthFailure | null }): T {
  if (res.error) {
    const code = res.error.code ?? (res.error.status === 429 ? 'RATE_LIMITED' : '');
    throw new Error(TEXTS[code] ?? res.error.message ?? `Errore ${res.error.status}`);
  }
  return res.data as T;
}
