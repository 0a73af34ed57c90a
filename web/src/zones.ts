import data from '../../crates/domain/data/fasting-zones.json';
import type { Protocol } from './api/types';

export interface Zone {
  key: string;
  fromHour: number;
  title: string;
  summary: string;
  source: string;
  sourceUrl: string;
}

export const ZONES: Zone[] = data.zones;

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

/** The milestones pushed during a fast (push-scheduler), in Italian, for the "next milestone" line. */
export function milestones(startMs: number, plannedEndMs: number): { key: string; label: string; at: number }[] {
  const h = 3_600_000;
  const list = [
    { key: 'hydration_2h', label: 'Idratazione (2 ore)', at: startMs + 2 * h },
    { key: 'hydration_4h', label: 'Idratazione (4 ore)', at: startMs + 4 * h },
    { key: 'hydration_6h', label: 'Idratazione (6 ore)', at: startMs + 6 * h },
    { key: 'electrolyte_18h', label: 'Elettroliti (18 ore)', at: startMs + 18 * h },
    { key: 'ending_soon', label: 'Fine tra 30 minuti', at: plannedEndMs - 30 * 60_000 },
  ];
  return list.filter((m) => m.at > startMs).sort((a, b) => a.at - b.at);
}
