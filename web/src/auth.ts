import { createAuthClient } from 'better-auth/client';
import { twoFactorClient } from 'better-auth/client/plugins';
import { passkeyClient } from '@better-auth/passkey/client';
import { lookup, t } from './i18n';

/** better-auth's own client, on the app's origin (auth is routed at /api/auth by nginx). */
export const authClient = createAuthClient({ baseURL: location.origin, plugins: [twoFactorClient(), passkeyClient()] });

export interface AuthFailure {
  code?: string | undefined;
  message?: string | undefined;
  status: number;
}


/** Turns better-auth's `{data, error}` into a value or an error in the app's language. */
export function unwrap<T>(res: { data: T | null; error: AuthFailure | null }): T {
  if (res.error) {
    const code = res.error.code ?? (res.error.status === 429 ? 'RATE_LIMITED' : '');
    throw new Error(lookup('auth', code) ?? res.error.message ?? t('auth.status', { status: res.error.status }));
  }
  return res.data as T;
}
