import { useCallback, useEffect, useState } from 'preact/hooks';
import { errorText } from './api/client';

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  reload: () => void;
  set: (v: T) => void;
}

/** Runs `load` on mount (and on `reload`), keeping the last good value while a new one loads. */
export function useLoad<T>(load: () => Promise<T>): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load().then(
      (v) => {
        if (!live) return;
        setData(v);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(errorText(e));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
    // `load` is a fresh closure on every render: `tick` alone asks for a new load.
  }, [tick]);
  const reload = useCallback(() => {
    setTick((t) => t + 1);
  }, []);
  return { data, error, loading, reload, set: setData };
}

/** The current time, refreshed every `ms` milliseconds. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const id = setInterval(() => {
      setNow(Date.now());
    }, ms);
    return () => {
      clearInterval(id);
    };
  }, [ms]);
  return now;
}

/** An action's state: busy while it runs, then a message for the person. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const run = useCallback(async (fn: () => Promise<string | undefined>) => {
    setBusy(true);
    setMessage(null);
    try {
      const ok = await fn();
      if (ok) setMessage({ text: ok, error: false });
    } catch (e) {
      setMessage({ text: errorText(e), error: true });
    } finally {
      setBusy(false);
    }
  }, []);
  /** A form's `onSubmit` that runs `fn` as this action instead of letting the browser navigate. */
  const submit = (fn: () => Promise<string | undefined>) => (e: Event) => {
    e.preventDefault();
    void run(fn);
  };
  return { busy, message, run, submit, setMessage };
}
