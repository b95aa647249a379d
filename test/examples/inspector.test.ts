import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { expectDocumentedOutput, runExample, tempDir } from './example-process.ts';

/** A port that was free a moment ago (the example binds it right away). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

it('runs the quickstart turn through the Stately inspector relay and exits once every event arrived', async () => {
  const port = await freePort();
  const run = await runExample('inspector', {
    env: { TURNLOG_DIR: tempDir(), INSPECT_PORT: String(port) },
  });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  // The last line is what a second client of the relay saw: the live actor's snapshots.
  expectDocumentedOutput('inspector', run.stdout.replaceAll(`localhost:${port}`, 'localhost:8080'));
  const sent = /^inspector: (\d+) inspection events sent/m.exec(run.stdout);
  expect(Number(sent?.[1])).toBeGreaterThan(9);
});
