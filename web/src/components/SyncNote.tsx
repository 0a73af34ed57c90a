import { useEffect, useState } from 'preact/hooks';
import { t } from '../i18n';
import { lastFailure, onQueueChange, pending } from '../queue';

/** "Offline, will sync": shown while changes wait for the connection, and why one was refused. */
export function SyncNote() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => {
      setTick((n) => n + 1);
    };
    const off = onQueueChange(update);
    addEventListener('online', update);
    addEventListener('offline', update);
    return () => {
      off();
      removeEventListener('online', update);
      removeEventListener('offline', update);
    };
  }, []);
  const count = pending().length;
  const failed = lastFailure();
  const text =
    count > 0
      ? navigator.onLine
        ? t('sync.sending', { count })
        : t('sync.offline', { count })
      : failed
        ? t('sync.refused', { reason: t(`errors.${failed}`, { defaultValue: failed }) })
        : '';
  return (
    <p class={failed && count === 0 ? 'sync error' : 'sync'} role="status" data-testid="sync-note">
      {text}
    </p>
  );
}
