// The app's language: Italian unless the person chose English (preferences.locale), or, before
// sign-in, unless the browser asks for English. One catalogue per language; i18next resolves keys,
// plurals and interpolation, and every number or date goes through Intl with the same locale.
import i18next from 'i18next';
import it from './it.json';
import en from './en.json';

export type Locale = 'it' | 'en';

const STORED = 'digiuno:locale';

function browserLocale(): Locale {
  const langs = navigator.languages.length ? navigator.languages : [navigator.language];
  for (const l of langs) {
    const base = l.toLowerCase().slice(0, 2);
    if (base === 'it' || base === 'en') return base;
  }
  return 'it';
}

function initialLocale(): Locale {
  // The last language this browser showed the app in, so that a signed-in English reader does
  // not see a flash of Italian while GET /me answers.
  try {
    const kept = localStorage.getItem(STORED);
    if (kept === 'it' || kept === 'en') return kept;
  } catch {
    // Storage refused: the browser's language decides.
  }
  return browserLocale();
}

const i18n = i18next.createInstance();
void i18n.init({
  lng: initialLocale(),
  fallbackLng: 'it',
  supportedLngs: ['it', 'en'],
  resources: { it: { translation: it }, en: { translation: en } },
  // Preact escapes text itself.
  interpolation: { escapeValue: false },
  // Keys never name a namespace; a colon in a key is text.
  nsSeparator: false,
  initAsync: false,
  returnNull: false,
});
document.documentElement.lang = i18n.language;

export const t = i18n.t.bind(i18n);

/** An entry of a catalogue's table (e.g. the server's import reasons, which hold dots), or undefined. */
export function lookup(table: string, key: string): string | undefined {
  const entries = i18n.getResource(i18n.language, 'translation', table) as Record<string, string> | undefined;
  return entries?.[key];
}

export function locale(): Locale {
  return i18n.language === 'en' ? 'en' : 'it';
}

/** The BCP 47 tag for Intl: English with a 24-hour clock and day-month order, as in Rome. */
export function intlLocale(): string {
  return locale() === 'en' ? 'en-GB' : 'it-IT';
}

const listeners = new Set<(l: Locale) => void>();

export function onLocaleChange(fn: (l: Locale) => void): () => void {
  listeners.add(fn);
  return () => {
    listeners.delete(fn);
  };
}

export function setLocale(l: Locale): void {
  try {
    localStorage.setItem(STORED, l);
  } catch {
    // Kept for this page only.
  }
  if (l === locale()) return;
  void i18n.changeLanguage(l);
  document.documentElement.lang = l;
  listeners.forEach((fn) => {
    fn(l);
  });
}
