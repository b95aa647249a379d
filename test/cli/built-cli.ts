import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/** What one run of the built bin printed and exited with. */
export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The package built as `npm run build` builds it (tsconfig.build.json), into a folder of its own
 * under test-output/ (inside the repository, so the built files resolve its node_modules as an
 * installed package resolves its dependencies); `bin` runs `dist/cli/turnlog.js` as npm's bin
 * link does.
 */
export async function buildCli() {
  const out = path.join(root, 'test-output', `cli-${randomUUID().slice(0, 8)}`);
  mkdirSync(out, { recursive: true });
  await run(process.execPath, [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    path.join(root, 'tsconfig.build.json'),
    '--outDir',
    out,
  ]);
  const binPath = path.join(out, 'cli', 'turnlog.js');
  return {
    out,
    /** The built library's entry, for a --runtime module to import as a user's would. */
    index: path.join(out, 'index.js'),
    /** Runs the bin with `args`; never rejects on a non-zero exit. */
    async bin(
      args: readonly string[],
      options: { env?: Record<string, string>; cwd?: string } = {},
    ): Promise<BinResult> {
      try {
        const { stdout, stderr } = await run(process.execPath, [binPath, ...args], {
          cwd: options.cwd ?? out,
          env: { PATH: process.env.PATH ?? '', ...options.env },
          maxBuffer: 64 * 1024 * 1024,
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const failed = error as { code?: unknown; stdout?: string; stderr?: string };
        if (typeof failed.code !== 'number') throw error;
        return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
      }
    },
    /** Writes a file (a --runtime module) into the build's folder and returns its path. */
    file(name: string, text: string): string {
      const file = path.join(out, name);
      writeFileSync(file, text);
      return file;
    },
    remove() {
      rmSync(out, { recursive: true, force: true });
    },
  };
}

export type BuiltCli = Awaited<ReturnType<typeof buildCli>>;
