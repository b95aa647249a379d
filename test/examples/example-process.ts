import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, onTestFinished } from 'vitest';

/** The repository root (examples run from it unless a test says otherwise). */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A temp directory removed when the current test finishes. */
export function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-example-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** How an example process ended. */
export interface ExampleExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A running example, driven through its stdin and read through its stdout. */
export interface ExampleProcess {
  child: ChildProcessWithoutNullStreams;
  /**
   * Resolves with the output up to the next occurrence of `text` after the previous match
   * (each call moves a cursor forward); rejects if the process exits first.
   */
  next(text: string): Promise<string>;
  /** Writes one line to stdin. */
  answer(line: string): void;
  /** Resolves when the process has exited (and was reaped). */
  exited: Promise<ExampleExit>;
  stdout(): string;
}

/**
 * Runs `examples/<name>.ts` with this Node in a child process, offline: the provider API keys
 * are removed from its environment, so no test can reach a real provider.
 */
export function startExample(
  name: string,
  options: {
    env?: Record<string, string>;
    cwd?: string;
    stdin?: string;
    /** Keep it running after the current test (a server shared by several tests); kill it yourself. */
    outlivesTest?: boolean;
  } = {},
): ExampleProcess {
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  delete env.OPENAI_API_KEY;
  delete env.GOOGLE_GENERATIVE_AI_API_KEY;
  const child = spawn(process.execPath, [path.join(repoRoot, 'examples', `${name}.ts`)], {
    cwd: options.cwd ?? repoRoot,
    env,
  });
  let stdout = '';
  let stderr = '';
  let cursor = 0;
  let watcher: (() => void) | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    watcher?.();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<ExampleExit>((resolve) => {
    child.on('close', (code, signal) => {
      watcher?.();
      resolve({ code, signal, stdout, stderr });
    });
  });
  let done = false;
  exited.then(() => {
    done = true;
  });
  // A test that fails half way must not leave its example running.
  if (options.outlivesTest !== true) {
    onTestFinished(() => {
      if (!done) child.kill('SIGKILL');
    });
  }
  if (options.stdin !== undefined) child.stdin.end(options.stdin);
  return {
    child,
    exited,
    stdout: () => stdout,
    answer: (line) => child.stdin.write(`${line}\n`),
    next(text) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const index = stdout.indexOf(text, cursor);
          if (index !== -1) {
            watcher = undefined;
            cursor = index + text.length;
            return resolve(stdout.slice(0, cursor));
          }
          if (done || child.exitCode !== null || child.signalCode !== null) {
            watcher = undefined;
            reject(
              new Error(
                `${name} ended before printing ${JSON.stringify(text)}:\n${stdout}\n${stderr}`,
              ),
            );
          }
        };
        watcher = check;
        check();
      });
    },
  };
}

/** Runs an example to its end. */
export function runExample(
  name: string,
  options: { env?: Record<string, string>; cwd?: string; stdin?: string } = {},
): Promise<ExampleExit> {
  return startExample(name, { stdin: '', ...options }).exited;
}

/**
 * The output documented for `name` in README.md or docs/examples.md: the ```text block right
 * after its `<!-- output: name -->` marker.
 */
export function documentedOutput(name: string): string {
  const marker = `<!-- output: ${name} -->\n\`\`\`text\n`;
  for (const file of ['README.md', 'docs/examples.md']) {
    const doc = readFileSync(path.join(repoRoot, file), 'utf8');
    const start = doc.indexOf(marker);
    if (start === -1) continue;
    const from = start + marker.length;
    return doc.slice(from, doc.indexOf('\n```', from) + 1);
  }
  throw new Error(`neither README.md nor docs/examples.md has an output block for ${name}`);
}

/** Blanks what may differ between two runs: timings, session ids, the inspector's event count. */
export function normalizeOutput(output: string): string {
  return output
    .replace(/\(\d+(?:\.\d+)?ms\)/g, '(…ms)')
    .replace(/coding-agent-\d+/g, 'coding-agent-<id>')
    .replace(/\d+ inspection events/g, '<n> inspection events')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** Asserts that `output` is (or, with `part`, contains) the documented output of `name`. */
export function expectDocumentedOutput(
  name: string,
  output: string,
  { part = false }: { part?: boolean } = {},
): void {
  const documented = normalizeOutput(documentedOutput(name));
  if (part) expect(normalizeOutput(output)).toContain(documented);
  else expect(normalizeOutput(output)).toBe(documented);
}
