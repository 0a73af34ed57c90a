import { useState } from 'preact/hooks';
import { errorText } from '../api/client';
import { t } from '../i18n';

const WHO = ['pregnancy', 'minors', 'eatingDisorders', 'diabetes', 'underweight'] as const;

/**
 * Before the first fast of 24 hours or more: who should not fast that long without a doctor. The
 * person confirms once (preferences.longFastAcknowledged) and is not asked again.
 */
export function Safety({ protocol, onAccept, onCancel }: { protocol: string; onAccept: () => Promise<void>; onCancel: () => void }) {
  const [read, setRead] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const accept = (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    onAccept().then(
      () => {
        setBusy(false);
      },
      (err: unknown) => {
        setBusy(false);
        setError(errorText(err));
      },
    );
  };
  return (
    <form class="card safety" onSubmit={accept} aria-labelledby="safety-title" data-testid="safety">
      <h2 id="safety-title">{t('safety.title', { protocol })}</h2>
      <p>{t('safety.intro')}</p>
      <ul>
        {WHO.map((w) => (
          <li key={w}>{t(`safety.who.${w}`)}</li>
        ))}
      </ul>
      <p>{t('safety.stop')}</p>
      <label class="check">
        <input type="checkbox" id="safety-read" required checked={read} onChange={(e) => { setRead(e.currentTarget.checked); }} />
        {t('safety.confirm')}
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={busy || !read}>
          {t('safety.accept')}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          {t('safety.cancel')}
        </button>
      </div>
      {error && (
        <p class="notice error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
