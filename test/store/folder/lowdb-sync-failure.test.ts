import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fact, NewFact } from '../../../events/facts.ts';
import { type EventStore, StoreWriteError } from '../../../store/event-store.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { seededRandom } from '../../crash/crash-harness.ts';
import { storeFacts } from '../store-facts.ts';
import { powerCut } from './power-cut.ts';
import { type DiskOp, type FailSync, recordingFs } from './recording-fs.ts';

/**
 * EIO on fsync, beside the power-loss test: the same workload runs once per sync it makes, with
 * that sync failing (fsyncgate: the bytes stay readable in the cache, the disk may never get
 * them). Each rejected append is retried with the same facts, as StoreWriteError says to. Every
 * run must end with the same facts as a run without faults, and the disk a power cut leaves after
 * it — nothing unsynced kept, or a seeded choice — must hold every fact that was acknowledged.
 */

const scratch = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const segmentSize = 3;

/** The workload: two new sessions, appends to tails and across new segments, one at a time. */
function batches(): Map<string, NewFact[][]> {
  const s1 = storeFacts('s1');
  const s2 = storeFacts('s2');
  return new Map([
    [
      's1',
      [
        [s1.runStarted('a1', 'run_1')],
        [s1.steering('a2', 'run_1')],
        [s1.steering('a3', 'run_1'), s1.steering('a4', 'run_1')],
        ['a5', 'a6', 'a7', 'a8', 'a9'].map((id) => s1.steering(id, 'run_1')),
        [s1.steering('a10', 'run_1')],
      ],
    ],
    [
      's2',
      [
        [s2.runStarted('b1', 'run_1'), s2.steering('b2', 'run_1')],
        [s2.steering('b3', 'run_1', 'x'.repeat(5000))],
        [s2.steering('b4', 'run_1')],
      ],
    ],
  ]);
}

interface Outcome {
  ops: DiskOp[];
  image: ReturnType<typeof recordingFs>['image'];
  /** When each append was acknowledged: after `ops[0..op)`. */
  acks: { op: number; sessionId: string; seq: number }[];
  rejected: unknown[];
  /** Every session's facts when the workload ended, as JSON lines. */
  stored: Map<string, string[]>;
}

/** Runs the workload in a new folder, retrying each rejected append (at most twice). */
async function runWorkload(dir: string, failSync: FailSync | undefined): Promise<Outcome> {
  await lowdbStore({ dir }).close();
  const recording = recordingFs(dir, { failSync });
  const store = lowdbStore({ dir, segmentSize, fs: recording.fs });
  const acks: Outcome['acks'] = [];
  const rejected: unknown[] = [];
  const append = async (sessionId: string, facts: NewFact[]) => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const { lastSeq } = await store.append(sessionId, facts);
        acks.push({ op: recording.ops.length, sessionId, seq: lastSeq });
        return;
      } catch (error) {
        rejected.push(error);
        if (attempt === 3) throw error;
      }
    }
  };
  await Promise.all(
    [...batches()].map(async ([sessionId, list]) => {
      for (const facts of list) await append(sessionId, facts);
    }),
  );
  const stored = new Map<string, string[]>();
  for (const sessionId of ['s1', 's2']) {
    stored.set(
      sessionId,
      (await store.read(sessionId)).map((fact) => JSON.stringify(fact)),
    );
  }
  await store.close();
  return { ops: recording.ops, image: recording.image, acks, rejected, stored };
}

/** Opens the disk a power cut after all of `outcome.ops` leaves and checks what it holds. */
async function checkPowerCut(root: string, outcome: Outcome, random: () => number, name: string) {
  const dir = path.join(root, name);
  powerCut(outcome.image, outcome.ops, { random }).materialize(dir);
  try {
    const store = lowdbStore({ dir, segmentSize });
    const read = new Map<string, Fact[]>();
    for (const sessionId of ['s1', 's2']) read.set(sessionId, await store.read(sessionId));
    const findings = await store.findings();
    expect(findings.filter((finding) => finding.kind !== 'torn-tail-cut')).toEqual([]);
    for (const [sessionId, facts] of read) {
      const lines = facts.map((fact) => JSON.stringify(fact));
      const acked = Math.max(
        0,
        ...outcome.acks.filter((ack) => ack.sessionId === sessionId).map((ack) => ack.seq),
      );
      expect(lines).toEqual(outcome.stored.get(sessionId)?.slice(0, lines.length));
      expect(lines.length).toBeGreaterThanOrEqual(acked);
    }
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('lowdbStore when an fsync fails with EIO', () => {
  let root: string;
  let clean: Outcome;
  let runs = 0;
  const folder = () => {
    runs += 1;
    return path.join(root, `run-${runs}`);
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(scratch, 'turnlog-eio-'));
    clean = await runWorkload(folder(), undefined);
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('rejects the append, undoes the write and stores the retry again, at every sync', async () => {
    const syncs = clean.ops.filter((op) => op.op === 'sync').length;
    expect(syncs).toBeGreaterThan(20);
    expect(clean.rejected).toEqual([]);
    for (let failing = 1; failing <= syncs; failing += 1) {
      const outcome = await runWorkload(folder(), ({ count }) => count === failing);
      try {
        expect(outcome.rejected.length).toBeGreaterThanOrEqual(1);
        for (const error of outcome.rejected) expect(StoreWriteError.isInstance(error)).toBe(true);
        expect(outcome.stored).toEqual(clean.stored);
        // Power lost right after: what the failed sync was for never reached the disk.
        await checkPowerCut(root, outcome, () => 0, `cut-${failing}-none`);
        await checkPowerCut(root, outcome, () => 0.999_999, `cut-${failing}-all`);
        for (const seed of [1, 2, 3]) {
          await checkPowerCut(
            root,
            outcome,
            seededRandom(failing * 10 + seed),
            `cut-${failing}-${seed}`,
          );
        }
      } catch (error) {
        throw new Error(`with sync ${failing} of ${syncs} failing: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
  });

  it('cuts a tail back to its synced length and writes the retried facts again', async () => {
    // The second datasync of s1's first segment: the append of a3, a4 (a2's was the first).
    let tailSyncs = 0;
    const outcome = await runWorkload(folder(), ({ file }) => {
      if (!file.endsWith(`s1${path.sep}000000.jsonl`)) return false;
      tailSyncs += 1;
      return tailSyncs === 2;
    });
    expect(outcome.rejected).toHaveLength(1);
    expect((outcome.rejected[0] as StoreWriteError).message).toContain('not stored: retry them');
    const failedAt = outcome.ops.findIndex((op) => op.op === 'sync-failed');
    const failed = outcome.ops[failedAt] as Extract<DiskOp, { op: 'sync-failed' }>;
    // That file's operations around the failure (s2's interleave with them).
    const ofFile = outcome.ops.filter(
      (op) =>
        (op.op === 'write' ||
          op.op === 'truncate' ||
          op.op === 'sync' ||
          op.op === 'sync-failed') &&
        op.node === failed.node,
    );
    const at = ofFile.indexOf(failed);
    const before = ofFile.slice(at - 1, at + 5);
    const written = before[0] as Extract<DiskOp, { op: 'write' }>;
    expect(written).toMatchObject({ op: 'write', node: failed.node });
    // a3 fills the tail (segmentSize 3); a4 starts the next segment.
    const lines = written.data.toString('utf8').trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).id)).toEqual(['a3']);
    // Undone (cut back to where the write started, synced), then the retry's write and sync.
    expect(before.slice(1).map(({ op }) => op)).toEqual([
      'sync-failed',
      'truncate',
      'sync',
      'write',
      'sync',
    ]);
    expect(before[2]).toEqual({ op: 'truncate', node: failed.node, length: written.offset });
    expect(before[4]).toEqual({ ...written, op: 'write' });
  });

  it('refuses a session whose failed write cannot be undone, until the store is reopened', async () => {
    const dir = folder();
    await lowdbStore({ dir }).close();
    let broken = false;
    const recording = recordingFs(dir, {
      failSync: ({ file }) => broken && file.includes(`${path.sep}s1`),
    });
    const store: EventStore = lowdbStore({ dir, segmentSize, fs: recording.fs });
    const s1 = storeFacts('s1');
    const s2 = storeFacts('s2');
    await store.append('s1', [s1.runStarted('a1', 'run_1')]);
    broken = true;
    const failure = await store.append('s1', [s1.steering('a2', 'run_1')]).catch((e) => e);
    expect(StoreWriteError.isInstance(failure)).toBe(true);
    expect(failure.message).toContain(
      'refuses every call until the store is closed and opened again',
    );
    expect(await store.append('s1', [s1.steering('a2', 'run_1')]).catch((e) => e)).toBe(failure);
    expect(await store.read('s1').catch((e) => e)).toBe(failure);
    // openRuns() does not read its files either: it is reported, so recover() says damaged.
    expect(await store.openRuns()).toEqual([]);
    expect(await store.findings()).toEqual([
      {
        sessionId: 's1',
        kind: 'unreadable',
        file: failure.file,
        line: undefined,
        message: failure.message,
      },
    ]);
    // The other sessions go on.
    expect(await store.append('s2', [s2.runStarted('b1', 'run_1')])).toMatchObject({ lastSeq: 1 });
    expect((await store.read('s2')).map((fact) => fact.id)).toEqual(['b1']);
    await store.close();
    broken = false;
    const reopened = lowdbStore({ dir, segmentSize, fs: recording.fs });
    expect(await reopened.append('s1', [s1.steering('a3', 'run_1')])).toMatchObject({
      appended: [{ id: 'a3' }],
    });
    await reopened.close();
  });
});
