import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { testDatabaseUrl } from '../helpers/postgres.ts';
import { runExample } from './example-process.ts';

const schema = `example_workers_${process.pid}`;

afterEach(async () => {
  const admin = new pg.Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

it('runs three workers on one database: a decision on another worker, a killed worker’s run finished by another', async () => {
  const run = await runExample('workers', {
    env: { DATABASE_URL: testDatabaseUrl(), TURNLOG_EXAMPLE_SCHEMA: schema },
  });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const lines = run.stdout.trim().split('\n');
  const expected = [
    /^workers A and B in this process \(pid \d+\), schema example_workers_\d+$/,
    /^A: sent "Deploy v2 to staging\." → parked: deploy asks permission$/,
    /^B: allow deploy → B drives the run on$/,
    // A wrote run.started … the permission request; B the decision and everything after it.
    /^A's handle: completed — "Deployed v2 to staging\." \(facts written by A: 4, by B: 6\)$/,
    /^C: a worker in a child process \(pid \d+\)$/,
    /^C: migrate is running — SIGKILL$/,
    /^[AB]: took C's run over \d+\.\d s after the kill; migrate may have run: indeterminate, waiting for a person$/,
    /^A: report-unknown migrate$/,
    /^the run ended completed; migrate ran 1 time\(s\), never again after the kill$/,
  ];
  expect(lines).toHaveLength(expected.length);
  for (const [index, pattern] of expected.entries()) expect(lines[index]).toMatch(pattern);
  // Not before C's lease could have expired: renewed every leaseMs / 3, it lapses at least
  // 2/3 · leaseMs (0.67 s) after the kill; a takeover sooner would break fencing.
  const seconds = Number(/over (\d+\.\d) s/.exec(run.stdout)?.[1]);
  expect(seconds).toBeGreaterThanOrEqual(0.6);
}, 60_000);
