import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Fast, Symptoms } from '../api/types';
import { useAction } from '../hooks';
import { dropDraft, keepDraft, keptDraft, onSessionEnd } from '../session';
import { Notice } from './ui';
import { t } from '../i18n';

const SLIDERS: { key: 'energy' | 'hunger' | 'clarity'; label: string }[] = [
  { key: 'energy', label: 'diary.energy' },
  { key: 'hunger', label: 'diary.hunger' },
  { key: 'clarity', label: 'diary.clarity' },
];

interface DiaryDraft {
  headache: boolean;
  levels: { energy: number; hunger: number; clarity: number };
  note: string;
}

/** The symptom diary of one fast, running or ended. Saving never touches the timer. */
export function Diary({ fast, onSaved }: { fast: Fast; onSaved?: (f: Fast) => void }) {
  const s = fast.symptoms ?? {};
  const [headache, setHeadache] = useState(s.headache ?? false);
  const [levels, setLevels] = useState({ energy: s.energy ?? 5, hunger: s.hunger ?? 5, clarity: s.clarity ?? 5 });
  const [note, setNote] = useState(s.note ?? '');
  const action = useAction();
  const id = `diary-${fast.id}`;
  const draftName = `diary:${fast.id}`;
  const [restored, setRestored] = useState(false);
  const typed = useRef<DiaryDraft>({ headache, levels, note });
  typed.current = { headache, levels, note };

  useEffect(() => {
    const saved = { headache: s.headache ?? false, energy: s.energy ?? 5, hunger: s.hunger ?? 5, clarity: s.clarity ?? 5, note: s.note ?? '' };
    return onSessionEnd(() => {
      const t = typed.current;
      const changed =
        t.headache !== saved.headache || t.note !== saved.note || (['energy', 'hunger', 'clarity'] as const).some((k) => t.levels[k] !== saved[k]);
      if (changed) keepDraft(draftName, t);
    });
    // The saved values are those the form opened with.
  }, [draftName]);

  useEffect(() => {
    let live = true;
    void keptDraft<DiaryDraft>(draftName).then((d) => {
      if (!live || !d) return;
      setHeadache(d.headache);
      setLevels(d.levels);
      setNote(d.note);
      setRestored(true);
    });
    return () => {
      live = false;
    };
  }, [draftName]);

  const submit = (e: Event) => {
    e.preventDefault();
    const symptoms: Symptoms = { headache, ...levels, note };
    void action.run(async () => {
      const sent = await api.saveSymptoms(fast, symptoms);
      dropDraft(draftName);
      setRestored(false);
      onSaved?.(sent.data);
      return sent.queued ? t('sync.queued') : t('diary.saved');
    });
  };

  return (
    <form class="card diary" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t('diary.title')}</h2>
      {restored && (
        <div class="notice" role="status">
          <p>{t('diary.kept')}</p>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              dropDraft(draftName);
              setRestored(false);
              setHeadache(s.headache ?? false);
              setLevels({ energy: s.energy ?? 5, hunger: s.hunger ?? 5, clarity: s.clarity ?? 5 });
              setNote(s.note ?? '');
            }}
          >
            {t('diary.discard')}
          </button>
        </div>
      )}
      <label class="check">
        <input type="checkbox" name="headache" checked={headache} onChange={(e) => { setHeadache(e.currentTarget.checked); }} />
        {t('diary.headache')}
      </label>
      {SLIDERS.map(({ key, label }) => (
        <div class="slider" key={key}>
          <label for={`${id}-${key}`}>
            {t(label)}: <output for={`${id}-${key}`}>{levels[key]}</output>/10
          </label>
          <input
            id={`${id}-${key}`}
            name={key}
            type="range"
            min={1}
            max={10}
            step={1}
            value={levels[key]}
            onInput={(e) => {
              const v = Number(e.currentTarget.value);
              setLevels((l) => ({ ...l, [key]: v }));
            }}
          />
        </div>
      ))}
      <label for={`${id}-note`}>{t('diary.note')}</label>
      <textarea id={`${id}-note`} name="note" maxLength={2000} rows={3} value={note} onInput={(e) => { setNote(e.currentTarget.value); }} />
      <button type="submit" disabled={action.busy}>
        {t('diary.save')}
      </button>
      <Notice message={action.message} />
    </form>
  );
}
