import { render, type ComponentType } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import './styles.css';
import { onLinkClick, usePath } from './router';
import { Today } from './pages/Today';
import { Plan } from './pages/Plan';
import { History } from './pages/History';
import { Stats } from './pages/Stats';
import { Settings } from './pages/Settings';
import { NotFound } from './pages/NotFound';
import { Weight } from './pages/Weight';
import { whoAmI } from './session';
import { locale, onLocaleChange, t } from './i18n';
import { SyncNote } from './components/SyncNote';
import { startSync } from './queue';

const NAV = [
  { href: '/', label: 'nav.today' },
  { href: '/plan', label: 'nav.plan' },
  { href: '/history', label: 'nav.history' },
  { href: '/stats', label: 'nav.stats' },
  { href: '/settings', label: 'nav.settings' },
] as const;

/** Each page of the app by its path, with the key of its title. */
const PAGES: Record<string, { title: string; Page: ComponentType }> = {
  '/': { title: 'titles.today', Page: Today },
  '/plan': { title: 'titles.plan', Page: Plan },
  '/history': { title: 'titles.history', Page: History },
  '/stats': { title: 'titles.stats', Page: Stats },
  '/settings': { title: 'titles.settings', Page: Settings },
  '/weight': { title: 'titles.weight', Page: Weight },
};

function App() {
  const path = usePath();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  // A new language renders the whole app again, in place: no page loses what it holds.
  const [lang, setLang] = useState(locale());
  useEffect(() => onLocaleChange(setLang), []);
  const route = PAGES[path];
  const title = t(route?.title ?? 'titles.notFound');
  const Page = route?.Page ?? NotFound;

  useEffect(() => {
    document.title = `${title} · ${t('app.name')}`;
    // After a client-side move, focus goes to the new page's heading, as after a page load.
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector('h1')?.focus();
  }, [path, title, lang]);

  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip" href="#main">
        {t('app.skip')}
      </a>
      <header class="top">
        <a class="brand" href="/">
          {t('app.name')}
        </a>
        <SyncNote />
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <Page />
      </main>
      <nav class="tabs" aria-label={t('app.sections')}>
        <ul>
          {NAV.map((n) => (
            <li key={n.href}>
              <a href={n.href} aria-current={n.href === path ? 'page' : undefined}>
                {t(n.label)}
              </a>
            </li>
          ))}
        </ul>
      </nav>
    </div>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}

// The service worker keeps answers only once it knows whose they are.
void whoAmI();
// Changes made offline are sent once the connection returns.
startSync();

if ('serviceWorker' in navigator) {
  void navigator.serviceWorker.register('/sw.js', { scope: '/' });
}
