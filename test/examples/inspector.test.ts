import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { expectLinesInOrder, runExample, tempDir } from './example-process.ts';

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
  expectLinesInOrder(run.stdout, [
    `inspector: open http://localhost:${port} to watch (Stately inspector, https://stately.ai/inspect)`,
    'model: scripted (offline; set OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY for a real model)',
    '  1  run.started               → projecting',
    '  2  step.started              → requesting.streaming',
    '  3  step.completed            → settlingTools.deciding',
    '  4  tool.permission.decided   → settlingTools.running',
    '  5  tool.started              → settlingTools.running',
    '  6  tool.settled              → projecting',
    '  7  step.started              → requesting.streaming',
    '  8  step.completed            → terminal',
    '  9  run.ended                 → terminal',
    'completed: It is 18 °C and sunny in Paris: a good day for a walk.',
    // What a second client of the relay saw: the live actor's snapshots, as the inspector shows them.
    'inspector: the turn machine went projecting → requesting.streaming → settlingTools.deciding → settlingTools.running → projecting → requesting.streaming → terminal',
  ]);
  // Printed only once the relay passed on every event the inspector sent.
  const sent = /^inspector: (\d+) inspection events sent through ws:\/\/localhost:(\d+)$/m.exec(
    run.stdout,
  );
  expect(sent?.[2]).toBe(String(port));
  expect(Number(sent?.[1])).toBeGreaterThan(9);
});
