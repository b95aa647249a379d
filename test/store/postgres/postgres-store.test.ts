import fc from 'fast-check';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Fact, NewFact } from '../../../events/facts.ts';
import { ConcurrencyError, StoreCorruptionError } from '../../../store/event-store.ts';
import { postgresSchema, sqlLiteral } from '../../../store/postgres/postgres-connection.ts';
import { StoreOpenError } from '../../../store/postgres/postgres-errors.ts';
import { migrations } from '../../../store/postgres/postgres-migrations.ts';
import { notificationChannel } from '../../../store/postgres/postgres-notifications.ts';
import { postgresStore } from '../../../store/postgres/postgres-store.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { storeFacts } from '../store-facts.ts';

// Each store has its own pool: two stores on one schema are two processes on one database.
describe('postgresStore across processes', () => {
  let database: ReturnType<typeof testSchema>;
  let admin: pg.Pool;
  const a = storeFacts('session_a');

  beforeEach(() => {
    database = testSchema('pgstore');
    admin = database.pool();
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  /** Subscribes to session_a; `reached(n)` resolves once `n` facts arrived. */
  function collect(store: ReturnType<typeof database.open>) {
    const seen: Fact[] = [];
    const waiting: { count: number; resolve: () => void }[] = [];
    store.subscribe('session_a', (fact) => {
      seen.push(fact);
      for (const wait of waiting) if (seen.length >= wait.count) wait.resolve();
    });
    const reached = (count: number) =>
      new Promise<void>((resolve) => {
        if (seen.length >= count) resolve();
        else waiting.push({ count, resolve });
      });
    return { seen, reached };
  }

  it('keeps a fact byte for byte: key order, seq after id, \\u0000 and other odd text', async () => {
    const writer = database.open();
    const { type, limits, ...odd } = a.runStarted(
      'f1',
      'run_1',
      'nul \u0000 / 😀 / lone \ud800 / "quotes"',
    ) as Extract<NewFact, { type: 'run.started' }>;
    // Keys in an order of the caller's (jsonb would sort them by length, then bytes), nested too.
    const nested = Object.fromEntries(Object.entries(limits).reverse());
    const reordered = { system: 'z', type, limits: nested, ...odd };
    const { appended } = await writer.append('session_a', [reordered as NewFact]);
    const reader = database.open();
    const [read] = await reader.read('session_a');
    const { id, ...rest } = reordered;
    expect(JSON.stringify(read)).toBe(JSON.stringify({ id, seq: 1, ...rest }));
    expect(JSON.stringify(read)).toBe(JSON.stringify(appended[0]));
  });

  it('lets exactly one of two stores win each race of appends with the same expectedSeq', async () => {
    const left = database.open();
    const right = database.open();
    for (let round = 0; round < 12; round += 1) {
      const outcomes = await Promise.allSettled([
        left.append('session_a', [a.steering(`left_${round}`, 'run_1')], { expectedSeq: round }),
        right.append('session_a', [a.steering(`right_${round}`, 'run_1')], { expectedSeq: round }),
      ]);
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const lost = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason] : [],
      );
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(ConcurrencyError.isInstance(lost[0])).toBe(true);
      expect(lost[0]).toMatchObject({ expectedSeq: round, actualSeq: round + 1 });
    }
    const facts = await left.read('session_a');
    expect(facts.map((fact) => fact.seq)).toEqual([...Array(12).keys()].map((seq) => seq + 1));
  });

  it('gives concurrent appends of three stores gapless seq, each fact once', async () => {
    const stores = [database.open(), database.open(), database.open()];
    const results = await Promise.all(
      stores.flatMap((store, index) =>
        [...Array(8).keys()].map((n) =>
          store.append('session_a', [a.steering(`s${index}_${n}`, 'run_1')]),
        ),
      ),
    );
    const facts = await stores[0]?.read('session_a');
    expect(facts?.map((fact) => fact.seq)).toEqual([...Array(24).keys()].map((seq) => seq + 1));
    expect(new Set(facts?.map((fact) => fact.id)).size).toBe(24);
    expect(
      results.map((result) => result.appended[0]?.seq).sort((x, y) => (x ?? 0) - (y ?? 0)),
    ).toEqual(facts?.map((fact) => fact.seq));
    // Each store's own appends keep their call order.
    for (const [index] of stores.entries()) {
      const mine = facts?.filter((fact) => fact.id.startsWith(`s${index}_`)).map((fact) => fact.id);
      expect(mine).toEqual([...Array(8).keys()].map((n) => `s${index}_${n}`));
    }
  });

  it('treats a retry from another store (same ids) as a no-op', async () => {
    const first = database.open();
    const second = database.open();
    await first.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')]);
    const retry = await second.append('session_a', [a.runStarted('f1', 'run_1')], {
      expectedSeq: 0,
    });
    expect(retry).toEqual({ appended: [], lastSeq: 2 });
  });

  it('delivers to a subscriber in another store every fact appended after it subscribed, in order, once', async () => {
    const watcher = database.open();
    const writers = [database.open(), database.open()];
    await writers[0]?.append('session_a', [a.runStarted('before', 'run_1')]);
    const { seen, reached } = collect(watcher);
    // A read after subscribe ends where the subscription starts: nothing falls in between.
    const before = await watcher.read('session_a');
    await Promise.all(
      writers.flatMap((writer, index) =>
        [...Array(10).keys()].map((n) =>
          writer.append('session_a', [a.steering(`w${index}_${n}`, 'run_1')]),
        ),
      ),
    );
    await reached(20);
    expect(before.map((fact) => fact.id)).toEqual(['before']);
    expect(seen.map((fact) => fact.seq)).toEqual([...Array(20).keys()].map((n) => n + 2));
    expect(seen).toEqual((await watcher.read('session_a')).slice(1));
  });

  it('catches up after its LISTEN connection drops: the facts appended meanwhile still arrive, in order', async () => {
    const watcher = database.open();
    const writer = database.open();
    const { seen, reached } = collect(watcher);
    // Across processes a subscription is in place once a read of its store after it resolved.
    await watcher.read('session_a');
    await writer.append('session_a', [a.runStarted('f1', 'run_1')]);
    await reached(1);
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
       WHERE query = $1 AND datname = current_database()`,
      [`LISTEN "${notificationChannel(postgresSchema(database.schema), 'f', 'session_a')}"`],
    );
    expect(killed.rows.map((row) => row.killed)).toEqual([true]);
    // Appended while the watcher has no LISTEN connection: their notifications are lost.
    await writer.append('session_a', [a.steering('f2', 'run_1'), a.steering('f3', 'run_1')]);
    await writer.append('session_a', [a.steering('f4', 'run_1')]);
    await reached(4);
    expect(seen.map((fact) => `${fact.id}@${fact.seq}`)).toEqual(['f1@1', 'f2@2', 'f3@3', 'f4@4']);
  });

  it("receives the notifications of the sessions and requests it listens to, not every other store's", async () => {
    // The watcher's own pool, so its connections' notifications can be counted.
    const pool = new pg.Pool({ connectionString: database.url });
    const received: string[] = [];
    pool.on('connect', (client) =>
      client.on('notification', (message) => received.push(message.channel)),
    );
    const watcher = database.open({ pool });
    const writer = database.open();
    const b = storeFacts('session_b');
    const { seen, reached } = collect(watcher);
    await watcher.read('session_a');
    // Another session's appends and inbox posts (another worker's runs): none reaches the watcher.
    await writer.append('session_b', [b.runStarted('g1', 'run_b')]);
    for (let n = 2; n <= 6; n += 1)
      await writer.append('session_b', [b.steering(`g${n}`, 'run_b')]);
    const input = { callId: 'call_1', decision: 'allow' };
    await writer.postToInbox({
      id: 'r1',
      sessionId: 'session_b',
      runId: 'run_b',
      kind: 'decide',
      input,
      postedBy: 'w2',
    });
    await writer.append('session_a', [a.runStarted('f1', 'run_1')]);
    await writer.append('session_a', [a.steering('f2', 'run_1')]);
    await reached(2);
    const channelA = notificationChannel(postgresSchema(database.schema), 'f', 'session_a');
    expect(received).toEqual([channelA, channelA]);
    expect(seen.map((fact) => fact.id)).toEqual(['f1', 'f2']);
    await watcher.close();
    await pool.end();
  });

  it('LISTENs on a channel only while it has a subscriber', async () => {
    const pool = new pg.Pool({ connectionString: database.url });
    const received: string[] = [];
    pool.on('connect', (client) =>
      client.on('notification', (message) => received.push(message.payload ?? '')),
    );
    const watcher = database.open({ pool });
    const writer = database.open();
    const arrived: Fact[] = [];
    const unsubscribe = watcher.subscribe('session_a', (fact) => arrived.push(fact));
    await watcher.read('session_a');
    await writer.append('session_a', [a.runStarted('f1', 'run_1')]);
    while (arrived.length < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    unsubscribe();
    // The UNLISTEN goes on the LISTEN connection; a subscription of another session runs after it.
    const other = watcher.subscribe('session_c', () => {});
    await watcher.read('session_c');
    await writer.append('session_a', [a.steering('f2', 'run_1')]);
    await writer.append('session_c', [storeFacts('session_c').runStarted('h1', 'run_c')]);
    while (received.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    // session_a's second append was not delivered: only its first and session_c's.
    expect(received).toEqual(['1', '1']);
    other();
    await watcher.close();
    await pool.end();
  });

  it('delivers to a subscription made again at once after its channel was UNLISTENed', async () => {
    const watcher = database.open();
    const writer = database.open();
    await watcher.read('session_a');
    // Each round: the last subscriber goes (UNLISTEN) and a new one comes (LISTEN) in the same
    // tick, on a LISTEN connection that may still be sending the round before's statements.
    for (let round = 1; round <= 5; round += 1) {
      watcher.subscribe('session_a', () => {})();
      const arrived: Fact[] = [];
      const unsubscribe = watcher.subscribe('session_a', (fact) => arrived.push(fact));
      await watcher.read('session_a');
      const fact = round === 1 ? a.runStarted('f1', 'run_1') : a.steering(`f${round}`, 'run_1');
      await writer.append('session_a', [fact]);
      while (arrived.length < 1) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(arrived.map((seen) => seen.id)).toEqual([fact.id]);
      unsubscribe();
    }
  });

  it('sends any text (quotes, backslashes, SQL) as a literal that reads back as itself', async () => {
    const tricky = ["'; DROP TABLE facts; --", '\\', "\\'", "E'\\x'", '$$', '😀\u2028\n'];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom(...tricky),
          fc.string({ unit: 'grapheme' }).filter((text) => !text.includes('\0')),
        ),
        async (text) => {
          const { rows } = await admin.query(`SELECT ${sqlLiteral(text)}::text AS text`);
          expect(rows[0]?.text).toBe(text);
        },
      ),
      { numRuns: 200, seed: 42 },
    );
  });

  it('runs the migrations once when several stores open a new schema at once', async () => {
    const stores = [database.open(), database.open(), database.open(), database.open()];
    expect(await Promise.all(stores.map((store) => store.sessions()))).toEqual([[], [], [], []]);
    const { rows } = await admin.query(
      `SELECT version, name FROM "${database.schema}".migrations ORDER BY version`,
    );
    expect(rows).toEqual(migrations.map(({ version, name }) => ({ version, name })));
  });

  it('refuses a schema written by a newer turnlog, a database it cannot reach, and bad options', async () => {
    await database.open().sessions();
    await admin.query(
      `INSERT INTO "${database.schema}".migrations (version, name) VALUES (99, 'future')`,
    );
    const error = await database
      .open()
      .sessions()
      .catch((caught: unknown) => caught);
    expect(StoreOpenError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /at migration 99, written by a newer turnlog.*upgrade turnlog/,
    );
    expect(() => postgresStore({ connectionString: database.url, pool: admin })).toThrow(
      /give either connectionString or pool, not both/,
    );
    expect(() => postgresStore({ schema: 'x'.repeat(64) })).toThrow(/at most 63 bytes/);
    const unreachable = postgresStore({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    await expect(unreachable.openRuns()).rejects.toSatisfy(StoreOpenError.isInstance);
    await unreachable.close();
  });

  it('says to install pg when it cannot be loaded, and never needs it for a pool of yours', async () => {
    vi.doMock('pg', () => {
      throw new Error("Cannot find package 'pg'");
    });
    try {
      const store = postgresStore({ connectionString: database.url, schema: database.schema });
      const error = await store.sessions().catch((caught: unknown) => caught);
      expect(StoreOpenError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(
        /pg package .* could not be loaded; install it with `npm install pg`, or pass a pool/,
      );
      await store.close();
      const borrowed = database.open({ pool: admin });
      expect(await borrowed.sessions()).toEqual([]);
    } finally {
      vi.doUnmock('pg');
    }
  });

  it('answers openRuns from the runs index even when a session cannot be read, which findings reports', async () => {
    const store = database.open();
    await store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')]);
    await admin.query(
      `UPDATE "${database.schema}".facts SET body = '{"not":"a fact"}' WHERE id = 'f2'`,
    );
    expect(await store.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
    ]);
    const error = await store.read('session_a').catch((caught: unknown) => caught);
    expect(StoreCorruptionError.isInstance(error)).toBe(true);
    expect(await store.findings()).toEqual([
      {
        sessionId: 'session_a',
        kind: 'unreadable',
        file: `${database.schema}.facts`,
        line: undefined,
        message: expect.stringMatching(
          /the entry for seq 2 is not a valid fact: its type undefined is not a known fact type; it is left as it is/,
        ),
      },
    ]);
  });

  it('finds an unfinished run the runs index disagrees about: the log is the truth, the session is reported', async () => {
    const store = database.open();
    const open = (sessionId: string, runId: string) =>
      store.append(sessionId, [storeFacts(sessionId).runStarted(`${sessionId}_1`, runId)]);
    await open('session_a', 'run_a');
    await open('session_hidden', 'run_h');
    await open('session_ended', 'run_e');
    const b = storeFacts('session_b');
    await store.append('session_b', [b.runStarted('b1', 'run_b'), b.runEnded('b2', 'run_b')]);
    // The index row of one open run edited away, another's marked ended; the facts say both are open.
    await admin.query(`DELETE FROM "${database.schema}".runs WHERE session_id = 'session_hidden'`);
    await admin.query(
      `UPDATE "${database.schema}".runs SET ended_seq = 2 WHERE session_id = 'session_ended'`,
    );

    const reopened = database.open();
    expect(await reopened.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_a' },
    ]);
    const findings = await reopened.findings();
    expect(
      findings.map(({ sessionId, kind, file, line }) => ({ sessionId, kind, file, line })),
    ).toEqual([
      {
        sessionId: 'session_ended',
        kind: 'unreadable',
        file: `${database.schema}.runs`,
        line: undefined,
      },
      {
        sessionId: 'session_hidden',
        kind: 'unreadable',
        file: `${database.schema}.runs`,
        line: undefined,
      },
    ]);
    expect(findings[1]?.message).toBe(
      `postgresStore: session session_hidden in ${database.schema}.runs: run run_h is unfinished in ${database.schema}.facts (its run.started is seq 1, with no run.ended) but the runs index does not list it as open; the log is the truth, so the session is reported and left as it is: compare its rows in ${database.schema}.runs with its facts and correct the index row`,
    );
  });

  it('upgrades a schema at migration 1 to the facts index of run bounds, and keeps one an operator built first', async () => {
    const store = database.open();
    await store.append('session_a', [a.runStarted('f1', 'run_1')]);
    const indexes = async () =>
      (
        await admin.query(
          `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'facts_run_bounds'`,
          [database.schema],
        )
      ).rows.length;
    // As a schema written before migration 2: no index, no append function, no rows for them.
    await admin.query(`DROP INDEX "${database.schema}".facts_run_bounds`);
    await admin.query(`DROP FUNCTION "${database.schema}".append_facts`);
    await admin.query(`DELETE FROM "${database.schema}".migrations WHERE version >= 2`);
    expect(await indexes()).toBe(0);
    const upgraded = database.open();
    expect(await upgraded.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
    ]);
    expect(await indexes()).toBe(1);
    // Upgraded to migration 3 as well: its appends go through append_facts.
    await upgraded.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 1 });
    expect((await upgraded.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2']);
    // Built beforehand (CONCURRENTLY, by an operator): the migration keeps it.
    await admin.query(`DROP FUNCTION "${database.schema}".append_facts`);
    await admin.query(`DELETE FROM "${database.schema}".migrations WHERE version >= 2`);
    expect(await database.open().openRuns()).toHaveLength(1);
    expect(await indexes()).toBe(1);
  });

  it('ends the pool it made on close, never a pool it was given', async () => {
    const given = new pg.Pool({ connectionString: database.url, max: 3 });
    const borrowed = database.open({ pool: given });
    await borrowed.append('session_a', [a.runStarted('f1', 'run_1')]);
    await borrowed.close();
    expect((await given.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await given.end();

    const application = `turnlog_close_${database.schema}`;
    const owned = postgresStore({
      connectionString: `${database.url}?application_name=${application}`,
      schema: database.schema,
    });
    owned.subscribe('session_a', () => {});
    await owned.read('session_a');
    const connections = async () =>
      Number(
        (
          await admin.query(
            'SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1',
            [application],
          )
        ).rows[0]?.n,
      );
    expect(await connections()).toBeGreaterThan(0);
    await owned.close();
    // The backends end shortly after their connections close: await that fact.
    while ((await connections()) > 0) await new Promise((resolve) => setImmediate(resolve));
    expect(await connections()).toBe(0);
  });
});
