// Writes made without a connection. Each person's action gets one Idempotency-Key, kept with it
// until the server has answered, so a retry can never count twice (a fast started and ended
// offline is one fast). The queue lives in localStorage under the user's id: another person
// signing in on the same browser neither sees nor sends it.
import { ApiError } from './api/errors';
import { knownUser, whoAmI } from './session';

export type OpKind = 'start' | 'end' | 'patch' | 'weight' | 'water';

export interface Op {
  key: string;
  kind: OpKind;
  method: 'POST' | 'PATCH';
  path: string;
  body: unknown;
  /** The placeholder id of what this op creates (`local:<uuid>`), replaced once the server answers. */
  local?: string;
  /** What the page shows until the server has answered. */
  optimistic: unknown;
  /** The id of the fast an end or a patch is for (a placeholder or a server id). */
  target?: string;
}

interface Stored {
  ops: Op[];
  /** Placeholder ids the server has named since. */
  ids: Record<string, string>;
}

const storageKey = (user: string) => `digiuno:queue:${user}`;

function load(user: string): Stored {
  try {
    const raw = localStorage.getItem(storageKey(user));
    if (raw) return JSON.parse(raw) as Stored;
  } catch {
    // Unreadable: nothing is pending.
  }
  return { ops: [], ids: {} };
}

function save(user: string, s: Stored): void {
  try {
    if (s.ops.length === 0) localStorage.removeItem(storageKey(user));
    else localStorage.setItem(storageKey(user), JSON.stringify(s));
  } catch {
    // A full or refused storage: the op stays in memory for this page through `memory`.
  }
  memory.set(user, s);
  notify();
}

const memory = new Map<string, Stored>();
const stored = (user: string) => memory.get(user) ?? load(user);

/** A random UUID, also where `crypto.randomUUID` is missing (pages served over plain http). */
export function uuid(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const isLocalId = (id: string) => id.startsWith('local:');

/** The ops still to send for the user last known on this browser (their number, for the note). */
export function pending(kind?: OpKind): Op[] {
  const user = knownUser();
  if (!user) return [];
  const ops = stored(user).ops;
  return kind ? ops.filter((o) => o.kind === kind) : ops;
}

/**
 * The ops of `user`, the person the page's data belongs to: a page never lays the waiting
 * changes of the person last signed in on this browser over another person's data.
 */
export function pendingOf(user: string, kind?: OpKind): Op[] {
  const ops = stored(user).ops;
  return kind ? ops.filter((o) => o.kind === kind) : ops;
}

const listeners = new Set<() => void>();
let failure: string | null = null;

function notify(): void {
  listeners.forEach((l) => {
    l();
  });
}

export function onQueueChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => {
    listeners.delete(fn);
  };
}

/** Why the last op sent later was refused, until the next one is sent. */
export const lastFailure = () => failure;

const synced = new Set<() => void>();
/** Called after the queue has been sent, so that pages show the server's state again. */
export function onSynced(fn: () => void): () => void {
  synced.add(fn);
  return () => {
    synced.delete(fn);
  };
}

export interface Sent<T> {
  data: T;
  queued: boolean;
}

function resolve(path: string, ids: Record<string, string>): string {
  return path.replace(/local%3A[0-9a-f-]+|local:[0-9a-f-]+/g, (m) => {
    const id = decodeURIComponent(m);
    return encodeURIComponent(ids[id] ?? id);
  });
}

async function send(op: Op, ids: Record<string, string>): Promise<Response> {
  return fetch(resolve(op.path, ids), {
    method: op.method,
    credentials: 'same-origin',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json', 'Idempotency-Key': op.key },
    body: JSON.stringify(op.body),
  });
}

async function errorOf(res: Response): Promise<ApiError> {
  const body = (await res.json().catch(() => null)) as { code?: string; message?: string } | null;
  return new ApiError(res.status, body?.code ?? 'ERROR', body?.message ?? `HTTP ${res.status}`);
}

/**
 * Sends a write with an Idempotency-Key. Without a connection, or while earlier writes wait, it
 * is queued, and `optimistic` (with `queuedBody`, the body as it must be sent later, e.g. with
 * the moment of the tap) stands in for the answer.
 */
export async function write<T>(
  op: { kind: OpKind; method: 'POST' | 'PATCH'; path: string; body: unknown; queuedBody?: unknown; local?: string; target?: string },
  optimistic: () => T,
  onUnauthorized: () => never,
): Promise<Sent<T>> {
  const key = uuid();
  const user = knownUser();
  const queue = (): Sent<T> => {
    if (!user) throw new ApiError(0, 'OFFLINE', '');
    const data = optimistic();
    const s = stored(user);
    const entry: Op = { key, kind: op.kind, method: op.method, path: op.path, body: op.queuedBody ?? op.body, optimistic: data };
    if (op.local) entry.local = op.local;
    if (op.target) entry.target = op.target;
    save(user, { ...s, ops: [...s.ops, entry] });
    return { data, queued: true };
  };
  // Behind writes still waiting, a new one waits too: the server must see them in order.
  if (!navigator.onLine || (user && stored(user).ops.length > 0)) {
    const sent = queue();
    void flush();
    return sent;
  }
  let res: Response;
  try {
    res = await send({ key, kind: op.kind, method: op.method, path: op.path, body: op.body, optimistic: null }, user ? stored(user).ids : {});
  } catch {
    return queue();
  }
  if (res.status === 401) onUnauthorized();
  if (!res.ok) throw await errorOf(res);
  return { data: (await res.json()) as T, queued: false };
}

let flushing: Promise<void> | null = null;

/** Sends what waits, in order; stops at the first write the network or the server could not take now. */
export function flush(): Promise<void> {
  flushing ??= (async () => {
    try {
      const user = await whoAmIFresh();
      if (!user) return;
      let sentAny = false;
      for (;;) {
        const s = stored(user);
        const op = s.ops[0];
        if (!op) break;
        let res: Response;
        try {
          res = await send(op, s.ids);
        } catch {
          return;
        }
        // A lost session, a busy server: try again later, nothing is dropped.
        if (res.status === 401 || res.status === 429 || res.status >= 500) return;
        const ids = { ...s.ids };
        if (res.ok) {
          const body = (await res.json().catch(() => null)) as { id?: string } | null;
          if (op.local && body?.id) ids[op.local] = body.id;
          failure = null;
        } else {
          // Refused for good (the fast had already ended elsewhere, a limit): said once, then dropped.
          const err = await errorOf(res);
          failure = err.code;
        }
        const rest = stored(user).ops.filter((o) => o.key !== op.key);
        // Names given by the server stay known to this page once the queue is empty, for a
        // change made on what it still shows under a placeholder.
        save(user, { ops: rest, ids });
        sentAny = true;
      }
      if (sentAny) synced.forEach((fn) => { fn(); });
    } finally {
      flushing = null;
    }
  })();
  return flushing;
}

/** The signed-in user as the server sees it now: only they may send their queue. */
async function whoAmIFresh(): Promise<string | null> {
  const known = knownUser();
  if (!known || stored(known).ops.length === 0) return null;
  const user = await whoAmI(true);
  return user === known ? user : null;
}

let started = false;

export function startSync(): void {
  if (started) return;
  started = true;
  addEventListener('online', () => void flush());
  // Browsers do not always say when the connection returns (a captive portal, a flaky network).
  setInterval(() => {
    if (navigator.onLine && pending().length > 0) void flush();
  }, 15_000);
  void whoAmI().then(() => flush());
}
