import type {
  ApiErrorBody,
  ConsumeResult,
  Fast,
  FastPage,
  Me,
  NotificationConfig,
  NotificationSettings,
  Pause,
  Preferences,
  Recipe,
  SlotCategory,
  Stats,
  Suggestions,
  Symptoms,
  TestPushResult,
  TodayPlan,
} from './types';

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
  me: () => get<Me>('/me'),
  preferences: () => get<Preferences>('/me/preferences'),
  setPreferences: (p: Partial<Preferences>) => request<Preferences>('PATCH', '/me/preferences', p),
  currentFast: async (): Promise<Fast | null> => {
    try {
      return await get<Fast>('/me/fast-events/current');
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  },
  fasts: (limit: number, before?: string | null) =>
    get<FastPage>(`/me/fast-events?limit=${limit}${before ? `&before=${encodeURIComponent(before)}` : ''}`),
  startFast: (protocol: string) => request<Fast>('POST', '/me/fast-events', { protocol }),
  endFast: (id: string) => request<Fast>('POST', `/me/fast-events/${encodeURIComponent(id)}/end`, {}),
  saveSymptoms: (id: string, symptoms: Symptoms) =>
    request<Fast>('PATCH', `/me/fast-events/${encodeURIComponent(id)}`, { symptoms }),
  suggestions: (id: string) =>
    get<Suggestions>(`/me/fast-events/${encodeURIComponent(id)}/break-fast-suggestions`),
  stats: () => get<Stats>('/me/fasting/stats'),
  pause: () => get<Pause>('/me/fasting/pause'),
  setPause: (until?: string | null) =>
    request<Pause>('POST', '/me/fasting/pause', until === undefined ? {} : { until }),
  todayPlan: () => get<TodayPlan>('/me/meal-plans/today'),
  consume: (slotId: string) =>
    request<ConsumeResult>('POST', `/me/meal-plans/slots/${encodeURIComponent(slotId)}/consumed`),
  unconsume: (slotId: string) =>
    request<{ slot: ConsumeResult['slot'] }>('DELETE', `/me/meal-plans/slots/${encodeURIComponent(slotId)}/consumed`),
  recipes: (category: Recipe['category']) =>
    get<{ recipes: Recipe[] }>(`/me/recipes?category=${category}`),
  createPlan: (date: string, intermittentFasting: boolean, slots: { category: SlotCategory; recipeId?: string; title?: string }[]) =>
    request<unknown>('POST', '/me/meal-plans', { intermittentFasting, days: [{ date, slots }] }),
  notificationConfig: () => get<NotificationConfig>('/me/notifications/config'),
  notificationSettings: () => get<NotificationSettings>('/me/notifications/settings'),
  setNotificationSettings: (s: Partial<NotificationSettings>) =>
    request<NotificationSettings>('PATCH', '/me/notifications/settings', s),
  registerDevice: (endpoint: string, p256dh: string, auth: string) =>
    request<unknown>('POST', '/me/device-tokens', { platform: 'web', endpoint, keys: { p256dh, auth } }),
  removeDevice: (endpoint: string) => request<undefined>('DELETE', '/me/device-tokens', { endpoint }),
  testPush: () => request<TestPushResult>('POST', '/me/notifications/test'),
};

export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    const known: Record<string, string> = {
      FAST_ALREADY_RUNNING: 'Un digiuno è già in corso.',
      FAST_NOT_RUNNING: 'Questo digiuno è già terminato.',
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
