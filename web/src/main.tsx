import { render } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
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

const NAV = [
  { href: '/', label: 'Oggi' },
  { href: '/plan', label: 'Piano' },
  { href: '/history', label: 'Storico' },
  { href: '/stats', label: 'Statistiche' },
  { href: '/settings', label: 'Impostazioni' },
];

const TITLES: Record<string, string> = {
  '/': 'Oggi',
  '/plan': 'Piano di oggi',
  '/history': 'Storico',
  '/stats': 'Statistiche',
  '/settings': 'Impostazioni',
  '/weight': 'Peso',
};

function App() {
  const path = usePath();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  const title = TITLES[path] ?? 'Pagina non trovata';

  useEffect(() => {
    document.title = `${title} · Digiuno`;
    // After a client-side move, focus goes to the new page's heading, as after a page load.
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector('h1')?.focus();
  }, [path, title]);

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
        Vai al contenuto
      </a>
      <header class="top">
        <a class="brand" href="/">
          Digiuno
        </a>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {page}
      </main>
      <nav class="tabs" aria-label="Sezioni">
        <ul>
          {NAV.map((n) => (
            <li key={n.href}>
              <a href={n.href} aria-current={n.href === path ? 'page' : undefined}>
                {n.label}
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

if ('serviceWorker' in navigator) {
  void navigator.serviceWorker.register('/sw.js', { scope: '/' });
}
