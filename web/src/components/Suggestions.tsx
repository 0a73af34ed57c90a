import { api } from '../api/client';
import { useLoad } from '../hooks';
import { fmtNumber } from '../time';
import { LoadError, Loading } from './ui';

/** Easy-to-digest recipes to break a fast of 24 hours or more. */
export function Suggestions({ fastId }: { fastId: string }) {
  const res = useLoad(() => api.suggestions(fastId));
  return (
    <section class="card" aria-labelledby={`sugg-${fastId}`}>
      <h2 id={`sugg-${fastId}`}>Per rompere il digiuno</h2>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && (
        <ul class="recipes">
          {res.data.recipes.map((r) => (
            <li key={r.id}>
              <strong>{r.name}</strong>
              <span class="muted">
                {' '}
                · {fmtNumber(r.kcal)} kcal · {fmtNumber(r.prepMinutes)} min · proteine {fmtNumber(r.proteinG)} g
              </span>
              <p>{r.description}</p>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
