// Who is signed in on this page, and the work in progress kept when a session ends under a form.

import type { Me } from './api/types';
import { setLocale } from './i18n';

let who: Promise<string | null> | null = null;

/**
 * The id of the signed-in user, asked once per page load. Asked at start-up on every page, so
 * that the service worker learns whose answers it keeps before it keeps any. Never redirects:
 * pages that need a session do that themselves.
 */
export function whoAmI(fresh = false): Promise<string | null> {
  if (fresh) who = null;
  who ??= fetch('/me', { credentials: 'same-origin', headers: { Accept: 'application/json' } })
    .then(async (res) => {
      if (!res.ok) return null;
      const me = (await res.json()) as Me;
      const id = me.user.id;
      // The person's own language wins over the browser's from the first answer on.
      setLocale(me.user.preferences.locale);
      lastUser = id;
      try {
        localStorage.setItem(LAST_USER, id);
      } catch {
        // Private modes may refuse storage; drafts are then kept for this page only.
      }
      return id;
    })
    .catch(() => null);
  return who;
}

const LAST_USER = 'digiuno:user';
let lastUser: string | null = null;

/** The user last known on this browser (no request: offline too). */
export const knownUser = (): string | null => storedUser();

function storedUser(): string | null {
  try {
    return lastUser ?? localStorage.getItem(LAST_USER);
  } catch {
    return lastUser;
  }
}

/** Forms being typed register here; their drafts are written out when the session ends. */
const keepers = new Set<() => void>();

export function onSessionEnd(keep: () => void): () => void {
  keepers.add(keep);
  return () => {
    keepers.delete(keep);
  };
}

/** Called before leaving for the sign-in page because the session has ended. */
export function sessionEnded(): void {
  for (const keep of keepers) {
    try {
      keep();
    } catch {
      // A draft that cannot be kept must not stop the others.
    }
  }
}

// Drafts are keyed by user id, so that a person signing in on the same browser never sees
// another person's words.
const draftKey = (user: string, name: string) => `digiuno:draft:${user}:${name}`;

/** Keeps a draft for the user last known on this browser. */
export function keepDraft(name: string, value: unknown): void {
  const user = storedUser();
  if (!user) return;
  try {
    localStorage.setItem(draftKey(user, name), JSON.stringify(value));
  } catch {
    // Nothing more can be done without storage.
  }
}

/** A draft kept for the signed-in user (asked to the server, never taken on trust). */
export async function keptDraft<T>(name: string): Promise<T | null> {
  const user = await whoAmI();
  if (!user) return null;
  try {
    const raw = localStorage.getItem(draftKey(user, name));
    return raw === null ? null : (JSON.parse(raw) as T);
  } catch {
    return null;
  }
}

export function dropDraft(name: string): void {
  const user = storedUser();
  if (!user) return;
  try {
    localStorage.removeItem(draftKey(user, name));
  } catch {
    // Nothing kept, nothing to drop.
  }
}
