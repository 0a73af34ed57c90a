/// <reference lib="webworker" />
// The service worker: keeps the app shell offline, remembers the last API answers for offline
// use, shows pushes and opens their `url` on click.

const sw = self as unknown as ServiceWorkerGlobalScope;
const SHELL = 'shell-v1';
const DATA = 'data-v1';

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

const APP_ROUTES = new Set(['/', '/plan', '/history', '/stats', '/settings']);

sw.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== location.origin) return;

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
  if (url.pathname.startsWith('/me') && !url.pathname.startsWith('/me/export')) {
    // The last known state: answers are kept and served only when the network is gone.
    event.respondWith(
      (async () => {
        try {
          const res = await fetch(req);
          const cache = await caches.open(DATA);
          if (res.ok) await cache.put(req, res.clone());
          else if (res.status === 401) await caches.delete(DATA);
          return res;
        } catch {
          return (await caches.match(req, { cacheName: DATA })) ?? Response.error();
        }
      })(),
    );
  }
});

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
