import type { ComponentChildren } from 'preact';
import { t } from '../i18n';

export function PageTitle({ children }: { children: ComponentChildren }) {
  return <h1 tabIndex={-1}>{children}</h1>;
}

/** A polite live region: screen readers announce what an action did. */
export function Notice({ message, testId }: { message: { text: string; error: boolean } | null; testId?: string }) {
  return (
    <p class={message?.error ? 'notice error' : 'notice'} role={message?.error ? 'alert' : 'status'} aria-live="polite" data-testid={testId}>
      {message?.text ?? ''}
    </p>
  );
}

/** A card whose heading names it, for screen readers as for the eye. */
export function Card({ id, title, children }: { id: string; title: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** One term and its value in a `<dl>` of facts or key figures. */
export function Fact({ term, testId, children }: { term: ComponentChildren; testId?: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}

export function LoadError({ error, retry }: { error: string | null; retry: () => void }) {
  if (!error) return null;
  return (
    <div class="notice error" role="alert">
      <p>{error}</p>
      <button type="button" class="secondary" onClick={retry}>
        {t('common.retry')}
      </button>
    </div>
  );
}

export function Loading({ when }: { when: boolean }) {
  return when ? <p class="muted">{t('common.loading')}</p> : null;
}
