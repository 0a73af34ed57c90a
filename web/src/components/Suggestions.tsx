import { api } from '../api/client';
import { useLoad } from '../hooks';
import { fmtNumber } from '../time';
import { LoadError, Loading } from './ui';
import { t } from '../i18n';

/** Easy-to-digest recipes to break a fast of 24 hours or more. */
export function Suggestions({ fastId }: { fastId: string }) {
  const res = useLoad(() => api.suggestions(fastId));
  return (
    <section class="card" aria-labelledby={`sugg-${fastId}`}>
      <h2 id={`sugg-${fastId}`}>{t('suggestions.title')}</h2>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && (
        <ul class="recipes">
          {res.data.recipes.map((r) => (
            <li key={r.id}>
              <strong>{r.name}</strong>
              <span class="muted">
                {' '}
                · {t('suggestions.facts', { kcal: fmtNumber(r.kcal), minutes: fmtNumber(r.prepMinutes), protein: fmtNumber(r.proteinG) })}
              </span>
              <p>{r.description}</p>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
