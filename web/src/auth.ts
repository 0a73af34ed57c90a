import { createAuthClient } from 'better-auth/client';
import { twoFactorClient } from 'better-auth/client/plugins';

/** better-auth's own client, on the app's origin (auth is routed at /api/auth by nginx). */
export const authClient = createAuthClient({ baseURL: location.origin, plugins: [twoFactorClient()] });

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
};

/** Turns better-auth's `{data, error}` into a value or an Italian error. */
export function unwrap<T>(res: { data: T | null; error: AuthFailure | null }): T {
  if (res.error) {
    const code = res.error.code ?? (res.error.status === 429 ? 'RATE_LIMITED' : '');
    throw new Error(TEXTS[code] ?? res.error.message ?? `Errore ${res.error.status}`);
  }
  return res.data as T;
}
