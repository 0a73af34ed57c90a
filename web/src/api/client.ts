import { t } from '../i18n';
import { isLocalId, uuid, write } from '../queue';
import { sessionEnded } from '../session';
import { fastingHours } from '../zones';
import { ApiError } from './errors';
import type { ApiErrorBody, Body, Drink, Fast, Ok, PatchFast, Protocol, RecipeCategory, SlotIn, Symptoms, Weight } from './types';

export { ApiError };

/** Sent to the sign-in page (with a way back) when the session is missing or has ended. */
export function toSignIn(): never {
  // Whatever was being typed is kept for after the sign-in.
  sessionEnded();
  const back = location.pathname + location.search;
  location.assign(`/sign-in?callbackURL=${encodeURIComponent(back)}`);
  throw new ApiError(401, 'UNAUTHORIZED', t('errors.UNAUTHORIZED'));
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
    throw new ApiError(0, 'OFFLINE', t('errors.OFFLINE'));
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
  /** Starts a fast now; offline it is queued and shown as running at once. */
  startFast: (protocol: Protocol) => {
    const local = `local:${uuid()}`;
    const at = new Date().toISOString();
    return write<Ok<'fasts_start'>>(
      { kind: 'start', method: 'POST', path: '/me/fast-events', body: { protocol } satisfies Body<'fasts_start'>, queuedBody: { protocol, startedAt: at } satisfies Body<'fasts_start'>, local },
      () => ({
        id: local,
        status: 'IN_PROGRESS',
        protocol,
        startedAt: at,
        plannedEndAt: new Date(Date.parse(at) + fastingHours(protocol) * 3_600_000).toISOString(),
        endedAt: null,
        notifiedMilestones: [],
        symptoms: null,
        autoStarted: false,
      }),
      toSignIn,
    );
  },
  endFast: (fast: Fast) => {
    const at = new Date().toISOString();
    return write<Ok<'fasts_end'>>(
      { kind: 'end', method: 'POST', path: `/me/fast-events/${encodeURIComponent(fast.id)}/end`, body: {} satisfies Body<'fasts_end'>, queuedBody: { endedAt: at } satisfies Body<'fasts_end'>, target: fast.id },
      () => ({ ...fast, endedAt: at, status: Date.parse(at) >= Date.parse(fast.plannedEndAt) ? 'COMPLETED' : 'ENDED_EARLY' }),
      toSignIn,
    );
  },
  resumeFast: (id: string) => request<Fast>('POST', `/me/fast-events/${encodeURIComponent(id)}/resume`, {}),
  saveSymptoms: (fast: Fast, symptoms: Symptoms) =>
    write<Ok<'fasts_patch'>>(
      { kind: 'patch', method: 'PATCH', path: `/me/fast-events/${encodeURIComponent(fast.id)}`, body: { symptoms } satisfies Body<'fasts_patch'>, target: fast.id },
      () => ({ ...fast, symptoms }),
      toSignIn,
    ),
  /** Corrects a fast's start, end or protocol; the server computes its status again. */
  correctFast: (fast: Fast, patch: PatchFast) =>
    write<Ok<'fasts_patch'>>(
      { kind: 'patch', method: 'PATCH', path: `/me/fast-events/${encodeURIComponent(fast.id)}`, body: patch, target: fast.id },
      () => ({ ...fast, ...(patch as Partial<Fast>) }),
      toSignIn,
    ),
  /** Records a fast that has already ended. */
  addPastFast: (protocol: Protocol, startedAt: string, endedAt: string) =>
    request<Ok<'fasts_start'>>('POST', '/me/fast-events', { protocol, startedAt, endedAt } satisfies Body<'fasts_start'>),
  deleteFast: (id: string) => request<undefined>('DELETE', `/me/fast-events/${encodeURIComponent(id)}`),
  importFasts: async (csv: string): Promise<Ok<'fasts_import'>> => {
    let res: Response;
    try {
      res = await fetch('/me/fast-events/import', { method: 'POST', credentials: 'same-origin', headers: { Accept: 'application/json', 'Content-Type': 'text/csv' }, body: csv });
    } catch {
      throw new ApiError(0, 'OFFLINE', t('errors.OFFLINE'));
    }
    if (res.status === 401) toSignIn();
    const data = (await res.json().catch(() => null)) as (Ok<'fasts_import'> & Partial<ApiErrorBody>) | null;
    if (!res.ok) throw new ApiError(res.status, data?.code ?? 'ERROR', data?.message ?? `HTTP ${res.status}`);
    return data as Ok<'fasts_import'>;
  },
  weights: () => get<Ok<'weights_list'>>('/me/weights'),
  recordWeight: (w: Body<'weights_record'>) =>
    write<Weight>(
      { kind: 'weight', method: 'POST', path: '/me/weights', body: w },
      () => ({ id: `local:${uuid()}`, kg: w.kg, measuredOn: w.measuredOn ?? '', note: w.note ?? null, createdAt: new Date().toISOString() }),
      toSignIn,
    ),
  deleteWeight: (id: string) => request<undefined>('DELETE', `/me/weights/${encodeURIComponent(id)}`),
  water: (date?: string) => get<Ok<'water_day'>>(date ? `/me/water?date=${date}` : '/me/water'),
  addWater: (ml: number) =>
    write<Drink>(
      { kind: 'water', method: 'POST', path: '/me/water', body: { ml } satisfies Body<'water_add'> },
      () => ({ id: `local:${uuid()}`, ml, at: new Date().toISOString() }),
      toSignIn,
    ),
  deleteWater: (id: string) => request<undefined>('DELETE', `/me/water/${encodeURIComponent(id)}`),
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

/** A sentence for the person: the known codes in their language, else the server's message. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    return t(`errors.${e.code}`, { defaultValue: e.message || t('errors.ERROR') });
  }
  return e instanceof Error ? e.message : String(e);
}

export { isLocalId };
