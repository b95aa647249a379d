import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import type { Fact } from '../../../events/facts.ts';
import { createRuntime, type RecoveredRun } from '../../../runtime.ts';
import type { EventStore } from '../../../store/event-store.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { sessionFolderName } from '../../../store/folder/session-files.ts';
import { defineTool } from '../../../tools/define-tool.ts';

const fixture = path.resolve(import.meta.dirname, '../..', 'fixtures', 'stores', '0.1.0');
/** Every fact of the frozen folder, as 0.1.0 read it back: one JSON text per fact. */
const dumped = readFileSync(path.join(fixture, 'facts.jsonl'), 'utf8').split('\n').slice(0, -1);
const sessionIds = [...new Set(dumped.map((line) => (JSON.parse(line) as Fact).sessionId))];
const hashedId = sessionIds.find((id) => id.startsWith('Ünïcödé')) ?? '';

/** Every file of a folder, relative path → bytes. */
function filesOf(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files.set(path.relative(dir, file), readFileSync(file, 'latin1'));
  }
  return files;
}

function turnOf(report: RecoveredRun | undefined) {
  if (report === undefined || report.status === 'damaged') {
    throw new Error(`no resumable run: ${JSON.stringify(report)}`);
  }
  return report.turn;
}

describe('a .turnlog folder written by 0.1.0', () => {
  let dir: string;
  const opened: EventStore[] = [];
  const open = () => {
    const store = lowdbStore({ dir });
    opened.push(store);
    return store;
  };

  beforeEach(async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'turnlog-legacy-'));
    dir = path.join(root, 'store');
    cpSync(path.join(fixture, 'store'), dir, { recursive: true });
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(path.dirname(dir), { recursive: true, force: true });
  });

  it('opens and reads every old fact byte for byte, rewriting nothing', async () => {
    const before = filesOf(dir);
    const store = open();
    expect(await store.sessions()).toEqual(sessionIds);
    const read: string[] = [];
    for (const sessionId of await store.sessions()) {
      for (const fact of await store.read(sessionId)) read.push(JSON.stringify(fact));
    }
    expect(read).toEqual(dumped);
    expect(await store.loadPartial('mid-request')).toEqual(
      JSON.parse(readFileSync(path.join(fixture, 'store', 'partials', 'mid-request.json'), 'utf8')),
    );
    expect(await store.findings()).toEqual([]);
    await store.close();
    expect(filesOf(dir)).toEqual(before);
  });

  it('lists the open runs from each old tail summary', async () => {
    const store = open();
    expect((await store.openRuns()).map((run) => `${run.sessionId} ${run.runId}`)).toEqual(
      [
        `${hashedId} run_hashed_2`,
        'long run_long_141',
        'mid-request run_mid-request_1',
        'parked run_parked_2',
        'small-segments run_small-segments_3',
        'tool-started run_tool-started_1',
      ].sort(),
    );
  });

  it('resumes every unfinished run as the README promises and continues the sessions in new segments', async () => {
    const before = filesOf(dir);
    const executions: string[] = [];
    const tools = {
      lookup: defineTool({
        description: 'Looks a record up by key.',
        inputSchema: z.object({ key: z.string() }),
        execute: ({ key }) => `record ${key}`,
      }),
      remove: defineTool({
        description: 'Removes a record (asks first).',
        inputSchema: z.object({ key: z.string() }),
        permission: 'ask',
        execute: ({ key }) => {
          executions.push(`remove ${key}`);
          return `removed ${key}`;
        },
      }),
      deploy: defineTool({
        description: 'Deploys to a target.',
        inputSchema: z.object({ target: z.string() }),
        execute: ({ target }) => {
          executions.push(`deploy ${target}`);
          return `deployed to ${target}`;
        },
      }),
    };
    let counter = 0;
    const runtime = createRuntime({
      model: scriptedModel(() => ({ text: 'Done again.' })),
      tools,
      store: open(),
      generateId: (prefix) => `${prefix}_new_${++counter}`,
    });
    const reports = await runtime.recover();
    const bySession = new Map(reports.map((report) => [report.sessionId, report]));
    const summary = (sessionId: string) => {
      const report = bySession.get(sessionId);
      return report === undefined || report.status === 'damaged'
        ? report
        : {
            status: report.status,
            interruptedIn: report.interruptedIn,
            indeterminate: report.indeterminate,
          };
    };
    // Parked stays parked.
    for (const sessionId of ['parked', 'long', 'small-segments', hashedId]) {
      expect(summary(sessionId)).toEqual({
        status: 'parked',
        interruptedIn: 'awaitingPermission',
        indeterminate: [],
      });
      expect((await runtime.pending(sessionId)).map((pending) => pending.kind)).toEqual([
        'permission',
      ]);
    }
    // A started tool becomes indeterminate: never run again.
    const [deployCall] = (await runtime.facts('tool-started')).flatMap((fact) =>
      fact.type === 'tool.started' && fact.name === 'deploy' ? [fact.callId] : [],
    );
    expect(summary('tool-started')).toEqual({
      status: 'parked',
      interruptedIn: 'settlingTools.running',
      indeterminate: [deployCall],
    });
    // An interrupted request becomes a new attempt of the same step.
    expect(summary('mid-request')).toEqual({
      status: 'resumed',
      interruptedIn: 'requesting.streaming',
      indeterminate: [],
    });
    expect(await turnOf(bySession.get('mid-request')).done).toMatchObject({
      status: 'completed',
      text: 'Done again.',
    });
    const starts = (await runtime.facts('mid-request')).flatMap((fact) =>
      fact.type === 'step.started' ? [`${fact.stepId} ${fact.attempt}`] : [],
    );
    expect(starts).toEqual([
      'step_mid-request_1 1',
      'step_mid-request_2 1',
      'step_mid-request_2 2',
    ]);
    expect(bySession.has('finished')).toBe(false);

    // Decisions land and the runs finish.
    for (const sessionId of ['parked', 'long', 'small-segments', hashedId]) {
      const [pending] = await runtime.pending(sessionId);
      await runtime.decide({ sessionId, callId: pending?.callId ?? '', decision: 'allow' });
      expect(await turnOf(bySession.get(sessionId)).done).toMatchObject({ status: 'completed' });
    }
    await runtime.decide({
      sessionId: 'tool-started',
      callId: deployCall ?? '',
      decision: 'report-unknown',
    });
    expect(await turnOf(bySession.get('tool-started')).done).toMatchObject({ status: 'completed' });
    expect(executions).toEqual(['remove beta', 'remove beta', 'remove beta', 'remove beta']);
    const turn = await runtime.send({ sessionId: 'finished', text: 'Once more.' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'Done again.' });
    const after = new Map<string, Fact[]>();
    for (const sessionId of sessionIds) after.set(sessionId, await runtime.facts(sessionId));
    await runtime.close();

    // The old files are untouched; each session goes on in a new segment with a record.
    const now = filesOf(dir);
    for (const [file, bytes] of before) {
      if (file.startsWith('partials')) continue;
      expect(now.get(file), file).toBe(bytes);
    }
    const folder = (sessionId: string) => path.join(dir, 'sessions', sessionFolderName(sessionId));
    expect(readdirSync(folder('small-segments')).sort()).toEqual([
      '000000.json',
      '000001.json',
      '000002.json',
      '000003.json',
      '000004.json',
      '000005.json',
      '000006.jsonl',
      'session.json',
    ]);
    expect(readdirSync(folder(hashedId)).sort()).toEqual([
      '000000.json',
      '000001.jsonl',
      'session.json',
    ]);

    // A reopen reads the old facts byte for byte, then the new ones.
    const reopened = open();
    const read: string[] = [];
    for (const sessionId of await reopened.sessions()) {
      const facts = await reopened.read(sessionId);
      expect(facts).toEqual(after.get(sessionId));
      read.push(...facts.map((fact) => JSON.stringify(fact)));
    }
    expect(read.filter((line) => dumped.includes(line))).toEqual(dumped);
    expect(await reopened.openRuns()).toEqual([]);
    expect(await reopened.findings()).toEqual([]);
  });
});
