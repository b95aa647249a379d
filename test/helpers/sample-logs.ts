import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Fact } from '../../events/facts.ts';

const logsDir = join(import.meta.dirname, '..', 'fixtures', 'logs');

/** The frozen sample logs (test/fixtures/logs/*.jsonl), by file name without extension. */
export function sampleLogs(): { name: string; facts: Fact[] }[] {
  return readdirSync(logsDir)
    .filter((file) => file.endsWith('.jsonl'))
    .sort()
    .map((file) => ({
      name: file.replace(/\.jsonl$/, ''),
      facts: readFileSync(join(logsDir, file), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Fact),
    }));
}
