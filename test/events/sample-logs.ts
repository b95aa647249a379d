import { readFileSync } from 'node:fs';
import { type Fact, type FactOf, type FactType, isFact } from '../../events/facts.ts';

/** The frozen sample logs in test/fixtures/logs (see its README). */
export const sampleLogNames = [
  'text-only',
  'multi-tool',
  'permission',
  'steering',
  'compaction',
  'interrupted-tool',
  'recovered-tool',
  'retry-429',
  'stop',
  'workers',
  'traced',
  'reconciled',
  'settings',
  'chat',
] as const;

export type SampleLogName = (typeof sampleLogNames)[number];

/** The JSONL text of a sample log, exactly as committed. */
export function sampleLogText(name: SampleLogName): string {
  return readFileSync(new URL(`../fixtures/logs/${name}.jsonl`, import.meta.url), 'utf8');
}

/** Parses JSONL text into facts, refusing any line that is not a fact. */
export function parseFacts(text: string): Fact[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      const value: unknown = JSON.parse(line);
      if (!isFact(value)) throw new Error(`line ${index + 1} is not a fact: ${line.slice(0, 80)}`);
      return value;
    });
}

/** Serializes facts as JSONL text, one fact per line. */
export function factsToText(facts: readonly Fact[]): string {
  return `${facts.map((fact) => JSON.stringify(fact)).join('\n')}\n`;
}

export function loadSampleLog(name: SampleLogName): Fact[] {
  return parseFacts(sampleLogText(name));
}

/** The fact with `seq`, which must have the given type (so tests read ids from the log). */
export function factAt<TType extends FactType>(
  facts: readonly Fact[],
  seq: number,
  type: TType,
): FactOf<TType> {
  const fact = facts.find((candidate) => candidate.seq === seq);
  if (fact?.type !== type) throw new Error(`seq ${seq} is ${fact?.type}, not ${type}`);
  return fact as FactOf<TType>;
}
