/// <reference lib="webworker" />
// The service worker: keeps the app shell offline, remembers the last API answers of the person
// signed in for offline use, shows pushes and opens their `url` on click.

const sw = self as unknown as ServiceWorkerGlobalScope;
const SHELL = 'shell-v2';
// v2: answers are tied to the user they belong to; v1 answers are not, so they are dropped.
const DATA = 'data-v2';

interface PushPayload {
  title?: string;
  body?: string;
  url?: string;
  tag?: string;
  kind?: string;
}

async function cacheShell(): Promise<void> {
  const cache = await caches.open(SHELL);
  const res = await fetch('/', { cache: 'no-cache' });
  if (!res.ok) return;
  const html = await res.clone().text();
  await cache.put('/', res);
  // The hashed files the shell names: scripts, styles, the manifest and its icons.
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]).filter((u): u is string => !!u);
  await cache.addAll([...new Set(assets)]);
}

sw.addEventListener('install', (event) => {
  event.waitUntil(cacheShell().then(() => sw.skipWaiting()));
});

sw.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name !== SHELL && name !== DATA) await caches.delete(name);
      }
      await sw.clients.claim();
    })(),
  );
});

const APP_ROUTES = new Set(['/', '/plan', '/history', '/stats', '/settings', '/weight']);

const isPersonal = (path: string) => (path === '/me' || path.startsWith('/me/')) && !path.startsWith('/me/export');
/** Requests that start or end a session: whatever the cache holds may belong to someone else. */
const SESSION_CHANGES = /^\/api\/auth\/(sign-in|sign-up|sign-out|two-factor\/verify|revoke-sessions$|delete-user|not-me\/confirm|passkey\/verify-authentication)/;

sw.addEventListener('fetch', (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (url.origin !== location.origin) return;

  if (req.method !== 'GET' && SESSION_CHANGES.test(url.pathname)) {
    event.waitUntil(forgetPersonal());
    if (req.mode !== 'navigate') event.respondWith(watchAuth(req));
    return;
  }
  if (url.pathname.startsWith('/api/auth/') && req.mode !== 'navigate') {
    event.respondWith(watchAuth(req));
    return;
  }
  if (req.method !== 'GET') {
    if (isPersonal(url.pathname)) event.respondWith(change(req, url));
    return;
  }

  if (req.mode === 'navigate' && APP_ROUTES.has(url.pathname)) {
    // Network first so that a new release shows at once; the cached shell when offline.
    event.respondWith(
      fetch(req).catch(async () => (await caches.match('/', { cacheName: SHELL })) ?? Response.error()),
    );
    return;
  }
  if (url.pathname.startsWith('/assets/') || url.pathname.startsWith('/icons/')) {
    event.respondWith(
      (async () => {
        const hit = await caches.match(req, { cacheName: SHELL });
        if (hit) return hit;
        const res = await fetch(req);
        if (res.ok) await (await caches.open(SHELL)).put(req, res.clone());
        return res;
      })(),
    );
    return;
  }
  if (isPersonal(url.pathname)) event.respondWith(read(req, url));
});

// Personal answers live in DATA together with the id of the user they belong to (USER). Every
// way a session can end or change empties DATA, and nothing is kept or served from it while the
// user is not known, so that offline a browser shows only the data of the person last signed in
// on it, and none after a sign-out.
const USER = '/__personal/user';
const CURRENT = '/me/fast-events/current';
const match = { cacheName: DATA, ignoreVary: true, ignoreSearch: false };

// Every step that reads or changes DATA runs alone, in arrival order: a cache opened before a
// concurrent `caches.delete` would swallow what is put into it, and two first answers of `/me`
// could each empty what the other had just kept.
let queue: Promise<unknown> = Promise.resolve();
function alone<T>(step: () => Promise<T>): Promise<T> {
  const run = queue.then(step);
  queue = run.catch(() => undefined);
  return run;
}

function forgetPersonal(): Promise<void> {
  return alone(async () => {
    await caches.delete(DATA);
  });
}

async function knownUser(): Promise<string | null> {
  const hit = await caches.match(USER, match);
  return hit ? hit.text() : null;
}

let learning: Promise<void> | null = null;

/**
 * Asks the server who is signed in, when an answer comes before the page's own `GET /me` has
 * told (the first page load under this worker): the answer is kept instead of lost.
 */
function learnUser(): Promise<void> {
  learning ??= (async () => {
    try {
      const res = await fetch('/me', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (!res.ok) return;
      const id = ((await res.json()) as { user?: { id?: string } }).user?.id;
      if (!id) return;
      await alone(async () => {
        if ((await knownUser()) === null) await (await caches.open(DATA)).put(USER, new Response(id));
      });
    } catch {
      // Offline or refused: nothing is kept until the page's own request says who it is.
    } finally {
      learning = null;
    }
  })();
  return learning;
}

function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

const noFastRunning = () => jsonResponse({ code: 'NOT_FOUND', message: 'no fast is running' }, 404);

async function watchAuth(req: Request): Promise<Response> {
  const res = await fetch(req);
  if (res.status === 401) await forgetPersonal();
  return res;
}

/** Network first; the last answer (a 404 included) only offline and only for the same person. */
async function read(req: Request, url: URL): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(req);
  } catch {
    return alone(async () => {
      if ((await knownUser()) === null) return Response.error();
      return (await caches.match(req, match)) ?? Response.error();
    });
  }
  if (res.status === 401) {
    await forgetPersonal();
    return res;
  }
  const id = url.pathname === '/me' && res.ok ? ((await res.clone().json()) as { user?: { id?: string } }).user?.id : undefined;
  const copy = res.clone();
  if (!id && (copy.ok || copy.status === 404) && (await knownUser()) === null) await learnUser();
  await alone(async () => {
    if (id && id !== (await knownUser())) {
      await caches.delete(DATA);
      await (await caches.open(DATA)).put(USER, new Response(id));
    }
    if ((copy.ok || copy.status === 404) && (await knownUser()) !== null) {
      await (await caches.open(DATA)).put(req, copy);
    }
  });
  return res;
}

/** A change sent online: the answers it makes stale are replaced by what it returned, or dropped. */
async function change(req: Request, url: URL): Promise<Response> {
  const res = await fetch(req);
  if (res.status === 401) await forgetPersonal();
  else if (res.ok) {
    const copy = res.clone();
    if ((await knownUser()) === null) await learnUser();
    await alone(async () => {
      if ((await knownUser()) !== null) await afterChange(req.method, url.pathname, copy);
    });
  }
  return res;
}

interface FastLike {
  id?: string;
  status?: string;
}

async function cachedJson<T>(cache: Cache, path: string): Promise<T | null> {
  const hit = await cache.match(path, { ignoreVary: true });
  if (!hit?.ok) return null;
  return (await hit.json().catch(() => null)) as T | null;
}

async function dropWhere(cache: Cache, keep: (path: string) => boolean): Promise<void> {
  for (const key of await cache.keys()) {
    const path = new URL(key.url).pathname;
    if (path !== USER && !keep(path)) await cache.delete(key);
  }
}

async function afterChange(method: string, path: string, res: Response): Promise<void> {
  const cache = await caches.open(DATA);
  const body = res.status === 204 ? null : ((await res.json().catch(() => null)) as Record<string, unknown> | null);
  const current = await cachedJson<FastLike>(cache, CURRENT);

  if (path.startsWith('/me/fast-events')) {
    // Lists of fasts and the figures drawn from them may all have changed.
    await dropWhere(cache, (p) => p === CURRENT || !(p.startsWith('/me/fast-events') || p === '/me/fasting/stats'));
    const fast = body as FastLike | null;
    const id = /^\/me\/fast-events\/([^/]+)/.exec(path)?.[1];
    if (fast?.status === 'IN_PROGRESS') await cache.put(CURRENT, jsonResponse(fast));
    else if (path.endsWith('/end')) await cache.put(CURRENT, noFastRunning());
    else if (fast?.id && current?.id === fast.id) await cache.put(CURRENT, noFastRunning());
    else if (method === 'DELETE' && id && current?.id === decodeURIComponent(id)) await cache.put(CURRENT, noFastRunning());
    return;
  }
  if (path.startsWith('/me/meal-plans')) {
    const slot = body?.slot as { id?: string } | undefined;
    const plan = await cachedJson<{ slots?: { id?: string }[] }>(cache, '/me/meal-plans/today');
    if (slot?.id && plan?.slots) {
      plan.slots = plan.slots.map((s) => (s.id === slot.id ? slot : s));
      await cache.put('/me/meal-plans/today', jsonResponse(plan));
    } else {
      await cache.delete('/me/meal-plans/today', { ignoreVary: true });
    }
    const started = body?.autoStartedFast as { id?: string } | null | undefined;
    const removed = body?.removedFast as { id?: string } | null | undefined;
    if (started || removed) {
      await dropWhere(cache, (p) => !(p.startsWith('/me/fast-events') || p === '/me/fasting/stats'));
      // The started fast is fetched by the page at once; a removed one runs no more.
      if (removed) await cache.put(CURRENT, noFastRunning());
    }
    return;
  }
  if (path === '/me/preferences' || path === '/me/fasting/pause') {
    if (body) await cache.put(path, jsonResponse(body));
    const me = await cachedJson<{ user?: Record<string, unknown> }>(cache, '/me');
    if (body && me?.user) {
      if (path === '/me/preferences') me.user.preferences = { ...(me.user.preferences as object | undefined), ...body };
      else me.user.fastingPausedUntil = body.fastingPausedUntil;
      await cache.put('/me', jsonResponse(me));
    }
    return;
  }
  if (path === '/me/notifications/settings') {
    if (body) await cache.put(path, jsonResponse(body));
    return;
  }
  // Anything else: every answer of the same collection (`/me/<name>…`) is dropped.
  const collection = /^\/me\/[^/]+/.exec(path)?.[0] ?? '/me';
  await dropWhere(cache, (p) => !p.startsWith(collection));
}

sw.addEventListener('push', (event) => {
  let data: PushPayload;
  try {
    data = (event.data?.json() ?? {}) as PushPayload;
  } catch {
    data = { body: event.data?.text() ?? '' };
  }
  const options: NotificationOptions = {
    body: data.body ?? '',
    icon: '/icons/icon-192.png',
    badge: '/icons/icon-192.png',
    data: { url: data.url ?? '/' },
  };
  if (data.tag) options.tag = data.tag;
  event.waitUntil(sw.registration.showNotification(data.title ?? 'Digiuno', options));
});

sw.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const raw = (event.notification.data as { url?: string } | null)?.url ?? '/';
  // Only addresses of this app are opened.
  const target = new URL(raw, location.origin);
  const url = target.origin === location.origin ? target.href : location.origin + '/';
  event.waitUntil(
    (async () => {
      const open = await sw.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const c of open) {
        if ('navigate' in c) {
          // Focusing may be refused (no user activation left); opening the page matters more.
          await c.focus().catch(() => undefined);
          await c.navigate(url);
          return;
        }
      }
      await sw.clients.openWindow(url);
    })(),
  );
});
