import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, FactOf } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import type { RecoveredRun } from '../../runtime.ts';
import { DamagedSessionError } from '../../runtime-errors.ts';
import type { EventStore, StoreFinding } from '../../store/event-store.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { nodeStoreFs, type StoreFs } from '../../store/folder/store-fs.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A lowdbStore folder, and hand edits of what it holds. `segmentSize` 1 puts every fact in a
 * segment of its own, so a damaged fact is not in the tail (what `openRuns()` reads); with the
 * default, a small session is all tail.
 */
function storeDir(options: { segmentSize?: number } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-damage-'));
  dirs.push(dir);
  const segmentSize = options.segmentSize ?? 256;
  const open = () => lowdbStore({ dir, segmentSize });
  /** The segment holding fact `seq`, and the fact's line in it (line 1 is the header). */
  const where = (sessionId: string, seq: number) => {
    const index = Math.floor((seq - 1) / segmentSize);
    const file = path.join(dir, 'sessions', sessionId, `${String(index).padStart(6, '0')}.jsonl`);
    return { file, line: seq - index * segmentSize + 1 };
  };
  const files = (sessionId: string) =>
    readdirSync(path.join(dir, 'sessions', sessionId)).map((name) =>
      readFileSync(path.join(dir, 'sessions', sessionId, name), 'utf8'),
    );
  /** Replaces the line of fact `seq`, as a hand edit, a bad disk or an older turnlog would. */
  const editLine = (sessionId: string, seq: number, edit: (line: string) => string) => {
    const { file, line } = where(sessionId, seq);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[line - 1] = edit(lines[line - 1] ?? '');
    writeFileSync(file, lines.join('\n'));
    return file;
  };
  const editFact = (
    sessionId: string,
    seq: number,
    edit: (fact: Record<string, unknown>) => void,
  ) =>
    editLine(sessionId, seq, (line) => {
      const fact = JSON.parse(line) as Record<string, unknown>;
      edit(fact);
      return JSON.stringify(fact);
    });
  return { dir, open, files, editLine, editFact };
}

// Runtimes before and after a restart share one log: their ids must not repeat.
let generateId = sequentialIds();
afterEach(() => {
  generateId = sequentialIds();
});

/** Parks one run per session on an `ask` (4 facts each), then closes the runtime. */
async function parkSessions(store: EventStore, sessionIds: string[]) {
  const { tool } = addTool('ask');
  const runtime = testRuntime(store, {
    generateId,
    model: scriptedModel(
      sessionIds.map(() => ({ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] })),
    ),
    tools: { add: tool },
  });
  const runIds: string[] = [];
  for (const sessionId of sessionIds) {
    const turn = await runtime.send({ sessionId, text: 'add' });
    await until(turn, isFactOf('tool.permission.requested'));
    runIds.push(turn.runId);
  }
  await runtime.close();
  return runIds;
}

function restarted(store: EventStore) {
  const { tool, executions } = addTool('ask');
  const runtime = testRuntime(store, {
    generateId,
    model: scriptedModel([{ text: 'Three.' }]),
    tools: { add: tool },
  });
  return { runtime, executions };
}

const bySession = (reports: RecoveredRun[], sessionId: string) =>
  reports.filter((report) => report.sessionId === sessionId);

describe('runtime.recover() keeps damage where it is', () => {
  it('reports a session whose stored step.completed lacks toolCalls as damaged; the other resumes', async () => {
    const files = storeDir({ segmentSize: 1 });
    const [brokenRun] = await parkSessions(files.open(), ['broken', 'fine']);
    const file = files.editFact('broken', 3, (fact) => {
      delete fact.toolCalls;
    });
    const before = files.files('broken');

    const { runtime } = restarted(files.open());
    const reports = await runtime.recover();
    const [broken] = bySession(reports, 'broken');
    expect(broken).toMatchObject({
      sessionId: 'broken',
      runId: brokenRun,
      interruptedIn: undefined,
      status: 'damaged',
      findings: [{ kind: 'unreadable', sessionId: 'broken', file, line: 2 }],
    });
    expect(broken?.status === 'damaged' && broken.damage).toEqual([
      expect.stringContaining(
        `${file} line 2 is not valid: the entry for seq 3 (fact fact_3) is not a valid fact: step.completed field toolCalls is missing (expected array)`,
      ),
    ]);
    expect(bySession(reports, 'fine')).toMatchObject([{ status: 'parked' }]);
    const [pending] = await runtime.pending('fine');
    await runtime.decide({ sessionId: 'fine', callId: pending?.callId ?? '', decision: 'allow' });
    const fine = bySession(reports, 'fine')[0];
    expect(fine?.status === 'parked' && (await fine.turn.done)).toMatchObject({ text: 'Three.' });

    for (const call of [
      () => runtime.decide({ sessionId: 'broken', callId: 'call_1', decision: 'allow' }),
      () => runtime.steer({ sessionId: 'broken', text: 'more' }),
      () => runtime.stop({ sessionId: 'broken' }),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(DamagedSessionError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ sessionId: 'broken' });
      expect((error as Error).message).toMatch(
        /^Session broken cannot be resumed: its log is damaged \(.*toolCalls is missing.*\)\. Nothing was written/,
      );
    }
    await runtime.close();
    expect(files.files('broken')).toEqual(before);
  });

  it('reports a session whose tail segment is not valid JSON as damaged, with its finding; the other resumes', async () => {
    const files = storeDir();
    await parkSessions(files.open(), ['fine', 'torn']);
    const file = files.editLine('torn', 2, () => '{"id":"fact_6","seq":');
    const before = files.files('torn');

    const { runtime } = restarted(files.open());
    const reports = await runtime.recover();
    const [torn] = bySession(reports, 'torn');
    expect(torn).toMatchObject({
      sessionId: 'torn',
      runId: undefined,
      interruptedIn: undefined,
      status: 'damaged',
      findings: [{ kind: 'unreadable', sessionId: 'torn', file, line: 3 }],
    });
    expect(torn?.status === 'damaged' && torn.damage).toEqual([
      torn?.status === 'damaged' ? torn.findings[0]?.message : '',
    ]);
    expect(torn?.status === 'damaged' && torn.damage[0]).toContain(`${file} line 3 is not valid`);
    expect(bySession(reports, 'fine')).toMatchObject([{ status: 'parked' }]);
    await expect(runtime.stop({ sessionId: 'torn' })).rejects.toSatisfy(
      DamagedSessionError.isInstance,
    );
    await runtime.close();
    expect(files.files('torn')).toEqual(before);
  });

  it('reports a decision reason an older turnlog recorded as a number as damaged, on every restart, writing nothing', async () => {
    const files = storeDir();
    const store = files.open();
    await parkSessions(store, ['old']);
    // What an older turnlog wrote after decide({ reason: 42 }): the decision, then a restart's
    // run.recovered (each restart crashed on the reason and appended another).
    const reopened = files.open();
    const [, , , asked] = (await reopened.read('old')) as [
      Fact,
      Fact,
      Fact,
      FactOf<'tool.permission.requested'>,
    ];
    const envelope = { at: asked.at, sessionId: 'old', turnId: asked.turnId, runId: asked.runId };
    await reopened.append('old', [
      {
        ...envelope,
        id: 'decided',
        type: 'tool.permission.decided',
        state: 'settlingTools.running',
        callId: asked.callId,
        decision: 'deny',
        inputHash: asked.inputHash,
        by: 'user',
        reason: 'placeholder',
      },
      {
        ...envelope,
        id: 'recovered',
        type: 'run.recovered',
        state: 'settlingTools.running',
        interrupted: 'settlingTools.running',
        indeterminate: [],
      },
    ]);
    await reopened.close();
    files.editFact('old', 5, (fact) => {
      fact.reason = 42;
    });
    const before = files.files('old');

    for (let restart = 1; restart <= 2; restart += 1) {
      const { runtime, executions } = restarted(files.open());
      expect(await runtime.recover()).toMatchObject([
        {
          sessionId: 'old',
          status: 'damaged',
          damage: [
            expect.stringContaining('tool.permission.decided field reason must be string, not 42'),
          ],
        },
      ]);
      expect(executions).toEqual([]);
      await runtime.close();
      expect(files.files('old')).toEqual(before);
    }
  });

  describe('reports a session with a segment it cannot read as damaged; the other resumes', () => {
    /** Parks `unreadable` and `fine` (a segment per fact), breaks seq 2 of `unreadable`, recovers. */
    async function recoverWith(
      breakSegment: (file: string) => void,
      options: { fs?: (file: string) => NodeJS.ErrnoException | undefined } = {},
    ) {
      const files = storeDir({ segmentSize: 1 });
      await parkSessions(files.open(), ['fine', 'unreadable']);
      const segment = path.join(files.dir, 'sessions', 'unreadable', '000001.jsonl');
      breakSegment(segment);
      const failing = options.fs;
      const fs: StoreFs = {
        ...nodeStoreFs,
        readFile: (file) => {
          const error = failing?.(file);
          return error === undefined ? nodeStoreFs.readFile(file) : Promise.reject(error);
        },
      };
      const { runtime } = restarted(lowdbStore({ dir: files.dir, segmentSize: 1, fs }));
      const reports = await runtime.recover();
      expect(bySession(reports, 'fine')).toMatchObject([{ status: 'parked' }]);
      const [pending] = await runtime.pending('fine');
      await runtime.decide({ sessionId: 'fine', callId: pending?.callId ?? '', decision: 'allow' });
      const [broken] = bySession(reports, 'unreadable');
      const error = await runtime.stop({ sessionId: 'unreadable' }).catch((caught) => caught);
      expect(DamagedSessionError.isInstance(error)).toBe(true);
      await runtime.close();
      return { broken, segment };
    }
    const systemError = (code: string, file: string) =>
      Object.assign(new Error(`${code}: injected, open '${file}'`), { code, path: file });

    it('EIO', async () => {
      const { broken, segment } = await recoverWith(() => {}, {
        fs: (file) =>
          file.endsWith(`unreadable${path.sep}000001.jsonl`) ? systemError('EIO', file) : undefined,
      });
      expect(broken).toMatchObject({
        sessionId: 'unreadable',
        status: 'damaged',
        findings: [{ kind: 'unreadable', sessionId: 'unreadable', file: segment }],
      });
      expect(broken?.status === 'damaged' && broken.damage).toEqual([
        `lowdbStore: cannot read ${segment} (EIO: injected, open '${segment}'); check that this process may read and write ${path.dirname(segment)} and what it holds`,
      ]);
    });

    // EACCES is injected, not made with chmod 000: the suite runs as root in CI, and root reads
    // any file; the store sees the same error either way.
    it('EACCES', async () => {
      const { broken, segment } = await recoverWith(() => {}, {
        fs: (file) =>
          file.endsWith(`unreadable${path.sep}000001.jsonl`)
            ? systemError('EACCES', file)
            : undefined,
      });
      expect(broken).toMatchObject({ status: 'damaged', findings: [{ file: segment }] });
    });

    it('a folder where a segment should be', async () => {
      const { broken, segment } = await recoverWith((file) => {
        rmSync(file);
        mkdirSync(file);
      });
      expect(broken).toMatchObject({ status: 'damaged', findings: [{ file: segment }] });
      expect(broken?.status === 'damaged' && broken.damage[0]).toContain('EISDIR');
    });
  });

  it('finds a run the open-runs index leaves out, when the tail header and session.json agree: the log is the truth', async () => {
    const files = storeDir({ segmentSize: 1 });
    const [, hiddenRun] = await parkSessions(files.open(), ['fine', 'hidden']);
    // Seq 4 is the tail: its header and its record entry both say no run is open before it.
    const folder = path.join(files.dir, 'sessions', 'hidden');
    const tail = path.join(folder, '000003.jsonl');
    const lines = readFileSync(tail, 'utf8').split('\n');
    const header = JSON.parse(lines[0] ?? '');
    expect(header.openRuns).toEqual([{ turnId: expect.any(String), runId: hiddenRun }]);
    lines[0] = JSON.stringify({ ...header, openRuns: [] });
    writeFileSync(tail, lines.join('\n'));
    const recordFile = path.join(folder, 'session.json');
    const record = JSON.parse(readFileSync(recordFile, 'utf8'));
    for (const entry of record.segments) entry.openRuns = [];
    writeFileSync(recordFile, JSON.stringify(record));

    const store = files.open();
    const { runtime } = restarted(store);
    const reports = await runtime.recover();
    const [hidden] = bySession(reports, 'hidden');
    expect(hidden).toMatchObject({
      sessionId: 'hidden',
      status: 'damaged',
      findings: [{ kind: 'unreadable', sessionId: 'hidden', file: tail, line: 1 }],
    });
    expect(hidden?.status === 'damaged' && hidden.damage[0]).toContain(
      `${tail} line 1 is not valid: its openRuns summary does not match the facts before it`,
    );
    expect(bySession(reports, 'fine')).toMatchObject([{ status: 'parked' }]);
    await runtime.close();
  });

  it('reports every session the store found unreadable as damaged, with its findings', async () => {
    const { facts } = sampleLogs().find((log) => log.name === 'permission') ?? { facts: [] };
    const parked = facts.slice(0, 4);
    const inner = memoryStore({ facts: parked });
    const finding: StoreFinding = {
      sessionId: 'lost',
      kind: 'unreadable',
      file: '/data/.turnlog/sessions/lost/000003.json',
      line: undefined,
      message:
        'lowdbStore: /data/.turnlog/sessions/lost/000003.json is not valid JSON (position 12)',
    };
    const store: EventStore = { ...bind(inner), findings: async () => [finding] };
    const { runtime } = restarted(store);
    const reports = await runtime.recover();
    expect(reports).toMatchObject([
      {
        sessionId: 'lost',
        runId: undefined,
        interruptedIn: undefined,
        status: 'damaged',
        damage: [finding.message],
        findings: [finding],
      },
      { sessionId: parked[0]?.sessionId, status: 'parked' },
    ]);
    await runtime.close();
  });
});

/** The store's methods bound to it, so they can be spread into a wrapper. */
function bind(store: EventStore): EventStore {
  return {
    append: store.append.bind(store),
    read: store.read.bind(store),
    subscribe: store.subscribe.bind(store),
    openRuns: store.openRuns.bind(store),
    findings: store.findings.bind(store),
    sessions: store.sessions.bind(store),
    savePartial: store.savePartial.bind(store),
    loadPartial: store.loadPartial.bind(store),
    clearPartial: store.clearPartial.bind(store),
    close: store.close.bind(store),
  };
}
