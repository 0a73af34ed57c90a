import { render } from 'preact';
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

const TITLES: Record<string, string> = {
  '/': 'titles.today',
  '/plan': 'titles.plan',
  '/history': 'titles.history',
  '/stats': 'titles.stats',
  '/settings': 'titles.settings',
  '/weight': 'titles.weight',
};

function App() {
  const path = usePath();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  // A new language renders the whole app again, in place: no page loses what it holds.
  const [lang, setLang] = useState(locale());
  useEffect(() => onLocaleChange(setLang), []);
  const title = t(TITLES[path] ?? 'titles.notFound');

  useEffect(() => {
    document.title = `${title} · ${t('app.name')}`;
    // After a client-side move, focus goes to the new page's heading, as after a page load.
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector('h1')?.focus();
  }, [path, title, lang]);

  let page;
  switch (path) {
    case '/':
      page = <Today />;
      break;
    case '/plan':
      page = <Plan />;
      break;
    case '/history':
      page = <History />;
      break;
    case '/stats':
      page = <Stats />;
      break;
    case '/settings':
      page = <Settings />;
      break;
    case '/weight':
      page = <Weight />;
      break;
    default:
      page = <NotFound />;
  }

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
        {page}
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
