import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { seededRandom } from '../../crash/crash-harness.ts';
import { crashFact } from './crash-facts.ts';

const child = fileURLToPath(new URL('./append-child.ts', import.meta.url));
const sessions = ['alpha', 'beta', 'Gamma/δ'];
const kills = 50;
const segmentSize = 4;
// A fixed default keeps runs reproducible; set TURNLOG_CRASH_SEED to explore other schedules.
const seed = Number(process.env.TURNLOG_CRASH_SEED ?? 20_260_101);

/**
 * Runs the child until it has acknowledged `acks` appends (0: right after it opened the store),
 * waits `extraMs` more, SIGKILLs it and resolves with the highest acknowledged seq per session.
 */
function runAndKill(dir: string, acks: number, extraMs: number): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const acknowledged = new Map<string, number>();
    const process_: ChildProcess = spawn(
      process.execPath,
      [child, dir, String(segmentSize), ...sessions],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let seen = 0;
    let killing = false;
    let buffered = '';
    let stderr = '';
    const kill = () => {
      if (killing) return;
      killing = true;
      setTimeout(() => process_.kill('SIGKILL'), extraMs);
    };
    process_.stdout?.setEncoding('utf8');
    process_.stderr?.setEncoding('utf8');
    process_.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
    });
    process_.stdout?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const [word, session, seq] = line.split(' ');
        if (word === 'ready' && acks === 0) kill();
        if (word !== 'ack' || session === undefined || seq === undefined) continue;
        // Only what was printed before the kill counts as acknowledged.
        acknowledged.set(decodeURIComponent(session), Number(seq));
        seen += 1;
        if (seen >= acks) kill();
      }
    });
    process_.on('error', reject);
    process_.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(acknowledged);
      else reject(new Error(`the append child exited by itself (code ${code}): ${stderr}`));
    });
  });
}

describe('lowdbStore under SIGKILL', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-crash-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it(`reopens ${kills} times after a kill to a prefix holding every acknowledged fact`, async () => {
    const random = seededRandom(seed);
    for (let round = 1; round <= kills; round += 1) {
      const acks = Math.floor(random() * 10);
      const extraMs = Math.floor(random() * 4);
      try {
        const acknowledged = await runAndKill(dir, acks, extraMs);
        // The dead child's lock must not keep this reopen out.
        const store = lowdbStore({ dir, segmentSize });
        const stored: string[] = [];
        for (const sessionId of sessions) {
          const facts = await store.read(sessionId);
          if (facts.length > 0) stored.push(sessionId);
          const expected = facts.map((_, index) => ({
            ...crashFact(sessionId, index + 1),
            seq: index + 1,
          }));
          expect(facts).toEqual(expected);
          expect(facts.length).toBeGreaterThanOrEqual(acknowledged.get(sessionId) ?? 0);
        }
        expect(await store.sessions()).toEqual(stored.sort());
        // A kill can at most cut a line short that was never acknowledged: nothing unreadable.
        const findings = await store.findings();
        expect(findings.filter((finding) => finding.kind !== 'torn-tail-cut')).toEqual([]);
        await store.close();
        // Reading removed any temp file the kill left: only segments and the record remain.
        for (const folder of readdirSync(path.join(dir, 'sessions'))) {
          const names = readdirSync(path.join(dir, 'sessions', folder));
          expect(names.filter((name) => !/^(\d{6}\.jsonl|session\.json)$/.test(name))).toEqual([]);
        }
      } catch (error) {
        throw new Error(
          `crash round ${round} (acks ${acks}, +${extraMs} ms) failed; seed ${seed}, rerun with TURNLOG_CRASH_SEED=${seed}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    const store = lowdbStore({ dir, segmentSize });
    const lengths = await Promise.all(
      sessions.map(async (sessionId) => (await store.read(sessionId)).length),
    );
    await store.close();
    // The kills landed after real progress: each session grew across the rounds.
    for (const length of lengths) expect(length).toBeGreaterThan(segmentSize * 3);
    // 50 child processes: a node start-up each, seconds apiece when other suites share the machine.
  }, 180_000);
});
