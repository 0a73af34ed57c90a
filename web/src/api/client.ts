import { sessionEnded } from '../session';
import type { ApiErrorBody, Body, Fast, Ok, Protocol, RecipeCategory, SlotIn, Symptoms } from './types';

/** An answer of the API that is not a success, with the contract's `{code, message}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Sent to the sign-in page (with a way back) when the session is missing or has ended. */
export function toSignIn(): never {
  // Whatever was being typed is kept for after the sign-in.
  sessionEnded();
  const back = location.pathname + location.search;
  location.assign(`/sign-in?callbackURL=${encodeURIComponent(back)}`);
  throw new ApiError(401, 'UNAUTHORIZED', 'sessione scaduta');
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' },
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'OFFLINE', 'Sei offline: riprova quando la connessione torna.');
  }
  if (res.status === 401) toSignIn();
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const data: unknown = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const err = data as Partial<ApiErrorBody> | null;
    throw new ApiError(res.status, err?.code ?? 'ERROR', err?.message ?? `HTTP ${res.status}`);
  }
  return data as T;
}

const get = <T>(path: string) => request<T>('GET', path);

export const api = {
  me: () => get<Ok<'me'>>('/me'),
  preferences: () => get<Ok<'preferences_get'>>('/me/preferences'),
  setPreferences: (p: Body<'preferences_patch'>) => request<Ok<'preferences_patch'>>('PATCH', '/me/preferences', p),
  currentFast: async (): Promise<Ok<'fasts_current'> | null> => {
    try {
      return await get<Ok<'fasts_current'>>('/me/fast-events/current');
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  },
  fasts: (limit: number, before?: string | null) =>
    get<Ok<'fasts_list'>>(`/me/fast-events?limit=${limit}${before ? `&before=${encodeURIComponent(before)}` : ''}`),
  startFast: (protocol: Protocol) =>
    request<Ok<'fasts_start'>>('POST', '/me/fast-events', { protocol } satisfies Body<'fasts_start'>),
  endFast: (id: string) =>
    request<Ok<'fasts_end'>>('POST', `/me/fast-events/${encodeURIComponent(id)}/end`, {} satisfies Body<'fasts_end'>),
  resumeFast: (id: string) => request<Fast>('POST', `/me/fast-events/${encodeURIComponent(id)}/resume`, {}),
  saveSymptoms: (id: string, symptoms: Symptoms) =>
    request<Ok<'fasts_patch'>>('PATCH', `/me/fast-events/${encodeURIComponent(id)}`, { symptoms } satisfies Body<'fasts_patch'>),
  suggestions: (id: string) =>
    get<Ok<'fasts_suggestions'>>(`/me/fast-events/${encodeURIComponent(id)}/break-fast-suggestions`),
  stats: () => get<Ok<'stats'>>('/me/fasting/stats'),
  pause: () => get<Ok<'pause_get'>>('/me/fasting/pause'),
  setPause: (until?: string | null) =>
    request<Ok<'pause_set'>>('POST', '/me/fasting/pause', (until === undefined ? {} : { until }) satisfies Body<'pause_set'>),
  todayPlan: () => get<Ok<'plans_today'>>('/me/meal-plans/today'),
  consume: (slotId: string) =>
    request<Ok<'plans_consume'>>('POST', `/me/meal-plans/slots/${encodeURIComponent(slotId)}/consumed`),
  unconsume: (slotId: string) =>
    request<Ok<'plans_unconsume'>>('DELETE', `/me/meal-plans/slots/${encodeURIComponent(slotId)}/consumed`),
  recipes: (category: RecipeCategory) => get<Ok<'recipes_list'>>(`/me/recipes?category=${category}`),
  createPlan: (date: string, intermittentFasting: boolean, slots: SlotIn[]) =>
    request<Ok<'plans_create'>>('POST', '/me/meal-plans', { intermittentFasting, days: [{ date, slots }] } satisfies Body<'plans_create'>),
  notificationConfig: () => get<Ok<'notifications_config'>>('/me/notifications/config'),
  notificationSettings: () => get<Ok<'settings_get'>>('/me/notifications/settings'),
  setNotificationSettings: (s: Body<'settings_patch'>) =>
    request<Ok<'settings_patch'>>('PATCH', '/me/notifications/settings', s),
  registerDevice: (endpoint: string, p256dh: string, auth: string) =>
    request<Ok<'devices_register'>>('POST', '/me/device-tokens', { platform: 'web', endpoint, keys: { p256dh, auth } } satisfies Body<'devices_register'>),
  removeDevice: (endpoint: string) =>
    request<Ok<'devices_remove'>>('DELETE', '/me/device-tokens', { endpoint } satisfies Body<'devices_remove'>),
  testPush: () => request<Ok<'notifications_test'>>('POST', '/me/notifications/test'),
};

export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    const known: Record<string, string> = {
      FAST_ALREADY_RUNNING: 'Un digiuno è già in corso.',
      FAST_NOT_RUNNING: 'Questo digiuno è già terminato.',
      TOO_LATE_TO_RESUME: 'È passato troppo tempo: questo digiuno non si può più riprendere.',
      FAST_TOO_SHORT: 'I suggerimenti sono per digiuni di almeno 24 ore.',
      PUSH_DISABLED: 'Le notifiche push non sono attive sul server.',
      RATE_LIMITED: 'Troppe richieste: riprova tra poco.',
      INVALID_PASSWORD: 'La password attuale non è corretta.',
      PASSWORD_TOO_SHORT: 'La nuova password deve avere almeno 8 caratteri.',
      PASSWORD_TOO_LONG: 'La nuova password può avere al massimo 128 caratteri.',
      EMAIL_DISABLED: "L'invio di e-mail non è attivo.",
      SESSION_EXPIRED: 'Per sicurezza inserisci la password.',
    };
    return known[e.code] ?? e.message;
  }
  return e instanceof Error ? e.message : String(e);
}
