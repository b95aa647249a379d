import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreLockedError } from '../../../store/event-store.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';

const holdChild = fileURLToPath(new URL('./hold-child.ts', import.meta.url));

/** Starts hold-child on `dir` and resolves with the process and the first line it printed. */
async function startHolder(dir: string) {
  const child = spawn(process.execPath, [holdChild, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  // Listen for the exit at once: the child may exit before the caller gets to wait for it.
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  return {
    child,
    exited,
    report: JSON.parse(line) as { ready?: true; error?: string; pid?: number },
  };
}

describe('lowdbStore across processes', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-lock-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives a second process StoreLockedError with the first one pid', async () => {
    const { child, exited, report } = await startHolder(dir);
    expect(report).toEqual({ ready: true });
    const error = (() => {
      try {
        lowdbStore({ dir });
      } catch (caught) {
        return caught;
      }
    })();
    expect(StoreLockedError.isInstance(error)).toBe(true);
    expect((error as StoreLockedError).pid).toBe(child.pid);
    expect((error as Error).message).toContain(`process ${child.pid}`);
    child.stdin.end();
    await exited;
    // Once the holder closed its store, the dir opens again.
    await lowdbStore({ dir }).close();
  });

  it('keeps another process out while this one holds the dir', async () => {
    const store = lowdbStore({ dir });
    try {
      const { exited, report } = await startHolder(dir);
      expect(report).toEqual({ error: 'StoreLockedError', pid: process.pid });
      await exited;
    } finally {
      await store.close();
    }
  });
});
