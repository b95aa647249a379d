import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { NewFact } from '../../events/facts.ts';
import { checkDeploy } from '../../operations/deploy-check.ts';
import { replaySession } from '../../operations/replay-session.ts';
import { sessionOverview } from '../../operations/session-overview.ts';
import { createRuntime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';

const options = () => ({ model: scriptedModel(() => ({ text: 'ok' })) });

describe('the operator’s tools on every frozen sample log (test/fixtures/logs)', () => {
  for (const { name, facts } of sampleLogs()) {
    it(`${name}: an overview, a deploy check and a replay, none of which throws`, async () => {
      const overview = sessionOverview(facts);
      expect(overview?.sessionId).toBe(facts[0]?.sessionId);
      const store = memoryStore();
      await store.append(
        facts[0]?.sessionId ?? '',
        facts.map(({ seq: _seq, ...fact }) => fact as NewFact),
      );
      const open = (await store.openRuns()).length;
      const fingerprint = createRuntime({ ...options(), store: memoryStore() }).fingerprint();
      const report = await checkDeploy({ store, fingerprint });
      expect(report.checked).toBe(open);
      const replay = await replaySession({ facts, runtime: options() });
      expect(replay.runs.map((run) => run.runId)).toEqual(
        facts.filter((fact) => fact.type === 'run.started').map((fact) => fact.runId),
      );
    });
  }
});
