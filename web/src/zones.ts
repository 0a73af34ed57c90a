import data from '../../crates/domain/data/fasting-zones.json';
import type { Protocol } from './api/types';
import { t } from './i18n';

export interface Zone {
  key: string;
  fromHour: number;
  title: string;
  summary: string;
  source: string;
  sourceUrl: string;
}

const ZONES: Zone[] = data.zones;

/** The zones in the app's language: the shared data is Italian, other languages come from their catalogue. */
export function zones(): Zone[] {
  return ZONES.map((z) => ({
    ...z,
    title: t(`zones.${z.key}.title`, { defaultValue: z.title }),
    summary: t(`zones.${z.key}.summary`, { defaultValue: z.summary }),
  }));
}

// Every protocol the API accepts, in order: one the API gains but this list lacks fails to type-check.
export const PROTOCOLS = everyOf<Protocol>()(['12:12', '13:11', '14:10', '16:8', '18:6', '20:4', '23:1', '24:0', '36:0', '48:0', '72:0']);

function everyOf<T extends string>() {
  return <const L extends readonly T[]>(
    list: L & ([Exclude<T, L[number]>] extends [never] ? unknown : { missing: Exclude<T, L[number]> }),
  ): L => list;
}

export function isProtocol(value: string): value is Protocol {
  return (PROTOCOLS as readonly string[]).includes(value);
}

export function fastingHours(protocol: string): number {
  return Number(protocol.split(':')[0]);
}

export function zoneIndexAt(hours: number): number {
  let idx = 0;
  ZONES.forEach((z, i) => {
    if (z.fromHour <= hours) idx = i;
  });
  return idx;
}

/** The milestones pushed during a fast (push-scheduler), for the "next milestone" line. */
export function milestones(startMs: number, plannedEndMs: number): { key: string; label: string; at: number }[] {
  const h = 3_600_000;
  const list = [
    { key: 'hydration_2h', label: t('milestones.hydration', { count: 2 }), at: startMs + 2 * h },
    { key: 'hydration_4h', label: t('milestones.hydration', { count: 4 }), at: startMs + 4 * h },
    { key: 'hydration_6h', label: t('milestones.hydration', { count: 6 }), at: startMs + 6 * h },
    { key: 'electrolyte_18h', label: t('milestones.electrolytes', { count: 18 }), at: startMs + 18 * h },
    { key: 'ending_soon', label: t('milestones.endingSoon'), at: plannedEndMs - 30 * 60_000 },
  ];
  return list.filter((m) => m.at > startMs).sort((a, b) => a.at - b.at);
}
