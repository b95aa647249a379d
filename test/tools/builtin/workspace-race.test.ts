import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../../tools/builtin/workspace-tools.ts';
import type { Tool } from '../../../tools/tool.ts';
import { twinWorkspace } from '../helpers/call-tool.ts';

/**
 * Another process swaps `root/dir` (a real folder) for a symlink to `outside/dir` and back, as
 * fast as it can, until `stop` exists; then it puts the real folder back and prints its count.
 * A write may recreate `root/dir` while the real one is aside (inside the workspace, so no
 * leak): that folder is moved to `root/recreated-N` so the real one can go back.
 */
const swapperScript = `
const fs = require('node:fs');
const [dir, aside, target, stop] = process.argv.slice(1);
let swaps = 0;
let recreated = 0;
const attempt = (operation) => {
  try {
    operation();
    return true;
  } catch {
    return false;
  }
};
// Holding the symlink about five times longer than the real folder made the tools as they were
// before confined-files.ts leak most often: 13 to 40 reads of 3,000, and 22 to 101 writes.
const hold = (checks) => {
  for (let index = 0; index < checks; index += 1) fs.existsSync(stop);
};
while (!fs.existsSync(stop)) {
  if (!attempt(() => fs.renameSync(dir, aside))) continue;
  if (attempt(() => fs.symlinkSync(target, dir))) {
    hold(10);
    attempt(() => fs.unlinkSync(dir));
  }
  while (!attempt(() => fs.renameSync(aside, dir))) {
    recreated += 1;
    attempt(() => fs.renameSync(dir, dir.replace(/dir$/, 'recreated-' + recreated)));
  }
  swaps += 1;
  hold(2);
}
process.stdout.write(String(swaps));
`;

const attempts = 3_000;

let base: string;
let root: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  ({ base, root, outside } = twinWorkspace());
});

afterEach(async () => {
  if (swapper !== undefined && swapper.exitCode === null) {
    const exited = new Promise((resolve) => swapper?.once('exit', resolve));
    swapper.kill('SIGKILL');
    await exited;
  }
  swapper = undefined;
  rmSync(base, { recursive: true, force: true });
});

/** Starts the swapper; `stop()` ends it with the real folder back and returns its swap count. */
function startSwapper() {
  const stopFile = path.join(base, 'stop');
  const child = spawn(
    process.execPath,
    [
      '-e',
      swapperScript,
      path.join(root, 'dir'),
      path.join(root, 'dir.aside'),
      path.join(outside, 'dir'),
      stopFile,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  swapper = child;
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    printed += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    async stop(): Promise<number> {
      writeFileSync(stopFile, '');
      expect(await exited).toBe(0);
      return Number(printed);
    },
  };
}

/** Validates `input` with the tool's schema (as the runtime does), then executes it. */
async function attempt(tool: Tool, input: Record<string, unknown>) {
  const validated = await tool.inputSchema['~standard'].validate(input);
  if (validated.issues !== undefined) return { refused: true as const, text: '' };
  try {
    const text = (await tool.execute(validated.value, {
      signal: new AbortController().signal,
      callId: 'call_1',
      sessionId: 'session_1',
      idempotencyKey: 'turnlog-test',
    })) as string;
    return { refused: false as const, text };
  } catch (error) {
    return { refused: true as const, text: String(error) };
  }
}

const outsideEntries = () => readdirSync(path.join(outside, 'dir')).sort();

describe('workspace tools racing a parent-folder swap', () => {
  it(`reads nothing outside in ${attempts} readFile calls while a parent folder is swapped for a symlink`, async () => {
    const { readFile } = workspaceTools({ root });
    const swaps = startSwapper();
    const counts = { inside: 0, outside: 0, refused: 0 };
    for (let index = 0; index < attempts; index += 1) {
      const result = await attempt(readFile, { path: 'dir/file.txt' });
      if (result.text.includes('OUTSIDE')) counts.outside += 1;
      else if (result.refused) counts.refused += 1;
      else if (result.text.endsWith('\ninside\n')) counts.inside += 1;
      else throw new Error(`unexpected result: ${result.text}`);
    }
    const swapCount = await swaps.stop();
    expect(swapCount).toBeGreaterThan(0);
    expect(counts.outside).toBe(0);
    expect(counts.inside + counts.refused).toBe(attempts);
  }, 120_000);

  it(`writes nothing outside in ${attempts} writeFile calls while a parent folder is swapped for a symlink`, async () => {
    const { writeFile } = workspaceTools({ root });
    const before = outsideEntries();
    const swaps = startSwapper();
    let leaked = 0;
    let written = 0;
    for (let index = 0; index < attempts; index += 1) {
      // Even attempts write into the swapped folder; odd ones also create a folder in it.
      const target = index % 2 === 0 ? 'dir/note.txt' : `dir/sub-${index}/note.txt`;
      const result = await attempt(writeFile, { path: target, content: 'payload\n' });
      if (!result.refused) written += 1;
      const after = outsideEntries();
      if (after.join('\n') !== before.join('\n')) {
        leaked += 1;
        for (const name of after) {
          if (!before.includes(name)) {
            rmSync(path.join(outside, 'dir', name), { recursive: true, force: true });
          }
        }
      }
    }
    const swapCount = await swaps.stop();
    expect(swapCount).toBeGreaterThan(0);
    expect(leaked).toBe(0);
    expect(outsideEntries()).toEqual(before);
    expect(readFileSync(path.join(outside, 'dir', 'file.txt'), 'utf8')).toBe('OUTSIDE SECRET\n');
    // The writes that succeeded are inside, whole (some in folders a write recreated while the
    // real one was aside), and no temporary file is left anywhere.
    expect(written).toBeGreaterThan(0);
    const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) =>
      entry.isFile(),
    );
    expect(files.filter((entry) => entry.name.endsWith('.tmp'))).toEqual([]);
    const notes = files.filter((entry) => entry.name === 'note.txt');
    expect(notes.length).toBeGreaterThan(0);
    for (const note of notes) {
      expect(readFileSync(path.join(note.parentPath, note.name), 'utf8')).toBe('payload\n');
    }
  }, 120_000);
});
