import type { Fact } from '../../events/facts.ts';
import { loadSampleLog, sampleLogNames } from '../events/sample-logs.ts';

/** Every frozen sample log (test/fixtures/logs), with its name. */
export function sampleLogs(): { name: string; facts: Fact[] }[] {
  return sampleLogNames.map((name) => ({ name, facts: loadSampleLog(name) }));
}
