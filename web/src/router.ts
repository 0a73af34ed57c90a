import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

export function navigate(path: string): void {
  if (path === location.pathname) return;
  history.pushState(null, '', path);
  listeners.forEach((l) => {
    l();
  });
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => {
      setPath(location.pathname);
    };
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** Same-origin links of the app move without a page load; everything else is a normal link. */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest('a');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin === location.origin && url.pathname === location.pathname && url.hash) {
    // A link within the page (the skip link): the target takes the focus, as a keyboard user expects.
    const target = document.getElementById(decodeURIComponent(url.hash.slice(1)));
    if (!target) return;
    e.preventDefault();
    target.focus();
    target.scrollIntoView({ block: 'start' });
    return;
  }
  if (url.origin !== location.origin || !APP_ROUTES.includes(url.pathname)) return;
  e.preventDefault();
  navigate(url.pathname);
}

export const APP_ROUTES = ['/', '/plan', '/history', '/stats', '/settings', '/weight'];
