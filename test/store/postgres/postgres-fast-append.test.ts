import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { NewFact } from '../../../events/facts.ts';
import {
  type AppendOptions,
  ConcurrencyError,
  RunSealedError,
  StoreWriteError,
} from '../../../store/event-store.ts';
import {
  type PgPool,
  type PgPoolClient,
  postgresSchema,
} from '../../../store/postgres/postgres-connection.ts';
import { appendFacts } from '../../../store/postgres/postgres-facts.ts';
import { notificationChannel } from '../../../store/postgres/postgres-notifications.ts';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import { LeaseLostError, type RunLease, RunLeasedError } from '../../../store/run-leases.ts';
import { validateNewFacts } from '../../../store/session-log.ts';
import { storeFacts } from '../store-facts.ts';
import { leaseMs, under, useLeaseFixture } from './postgres-lease-fixture.ts';

const a = storeFacts('session_a');

/**
 * What a message of the append is: the fast path's (a batch of `append_facts` parts to check),
 * or the exact path's state read, write (a part it checked), COMMIT or ROLLBACK.
 */
const kind = ({ text, values }: { text: string; values: unknown[] | undefined }) =>
  text === 'ROLLBACK'
    ? 'rollback'
    : text === 'COMMIT'
      ? 'commit'
      : text.includes('append_facts(')
        ? (JSON.parse(String(values?.[0])) as { w?: boolean }[]).some((part) => part.w === true)
          ? 'write'
          : 'fast'
        : text.startsWith('BEGIN')
          ? 'state'
          : 'other';

/** A pool that records every message a checked-out connection sends (one message, one round trip). */
function countingPool(url: string) {
  const real = new pg.Pool({ connectionString: url, max: 4 });
  const messages: { text: string; values: unknown[] | undefined }[] = [];
  const pool: PgPool = {
    query: (text, values) => real.query(text, values),
    connect: async () => {
      const client = (await real.connect()) as unknown as PgPoolClient;
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== 'query') return Reflect.get(target, property, receiver);
          return (text: string, values?: unknown[]) => {
            messages.push({ text, values });
            return target.query(text, values);
          };
        },
      });
    },
    end: async () => {},
  };
  return {
    pool,
    /** The messages sent since the last call. */
    take(): { text: string; values: unknown[] | undefined }[] {
      return messages.splice(0);
    },
    end: () => real.end(),
  };
}

/**
 * Makes every fact INSERT of the schema wait, inside its transaction (after the append's checks
 * and locks, before its COMMIT), until `release()`: a trigger that takes an advisory lock the
 * test holds.
 */
async function holdFactInserts(admin: pg.Pool, schema: string, onlyId?: string) {
  const key = Math.floor(Math.random() * 1_000_000_000);
  const when = onlyId === undefined ? 'true' : `NEW.id = '${onlyId}'`;
  await admin.query(
    `CREATE FUNCTION "${schema}".hold_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF ${when} THEN PERFORM pg_advisory_xact_lock_shared(${key}); END IF; RETURN NEW; END $$`,
  );
  await admin.query(
    `CREATE TRIGGER hold BEFORE INSERT ON "${schema}".facts
     FOR EACH ROW EXECUTE FUNCTION "${schema}".hold_insert()`,
  );
  const holder = await admin.connect();
  await holder.query(`SELECT pg_advisory_lock(${key})`);
  const waiting = async (pattern: string) => {
    const { rows } = await admin.query(
      `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [pattern],
    );
    return rows.map((row) => Number(row.pid));
  };
  return {
    /** Resolves with the backend of the append once it waits at the hold. */
    async reached(): Promise<number> {
      for (;;) {
        const { rows } = await admin.query(
          `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1`,
          [key],
        );
        if (rows[0] !== undefined) return Number(rows[0].pid);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    /** Resolves once a statement of this schema matching `pattern` waits for a lock. */
    async lockWait(pattern: string): Promise<void> {
      while ((await waiting(pattern)).length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async release(): Promise<void> {
      await holder.query(`SELECT pg_advisory_unlock(${key})`);
      holder.release();
      await admin.query(`DROP TRIGGER hold ON "${schema}".facts`);
    },
  };
}

describe('postgresStore append: one round trip when the session is as its driver believes', () => {
  const f = useLeaseFixture();

  /** A store over a counting pool, and the exact path alone on the same schema. */
  async function counted() {
    const counting = countingPool(f.database.url);
    const store = f.database.open({ pool: counting.pool });
    const exactPool = new pg.Pool({ connectionString: f.database.url, max: 2 });
    const schema = postgresSchema(f.database.schema);
    await store.sessions(); // opened (migrated) before counting
    counting.take();
    return {
      store,
      take: counting.take,
      /** What the exact path alone (today's two round trips) answers to the same append now. */
      async exact(facts: NewFact[], options: AppendOptions = {}, sessionId = 'session_a') {
        const where = `postgresStore.append('${sessionId}')`;
        return appendFacts({
          pool: exactPool as unknown as PgPool,
          schema,
          sessionId,
          candidates: validateNewFacts(facts, options, { where, sessionId }),
          expectedSeq: options.expectedSeq,
          where,
          batches: undefined,
        }).catch((error: unknown) => error);
      },
      async end() {
        await counting.end();
        await exactPool.end();
      },
    };
  }

  it('sends one message per append with expectedSeq: a new session, a run under a lease, a run that ends', async () => {
    const c = await counted();
    await c.store.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 });
    await c.store.append('session_a', [a.steering('f2', 'run_1'), a.runEnded('f3', 'run_1')], {
      expectedSeq: 1,
    });
    expect(c.take().map(kind)).toEqual(['fast', 'fast']);
    const lease = await f.acquired(f.w2, 'f.w2', 'run_2');
    c.take();
    await c.store.append(
      'session_a',
      [under(lease, a.runStarted('f4', 'run_2')), under(lease, a.steering('f5', 'run_2'))],
      { expectedSeq: 3 },
    );
    await c.store.append('session_a', [under(lease, a.runEnded('f6', 'run_2'))], {
      expectedSeq: 5,
    });
    const messages = c.take();
    expect(messages.map(kind)).toEqual(['fast', 'fast']);
    // One statement each, its own transaction: values as parameters, never in the SQL text.
    expect(messages.every(({ values }) => values?.length === 5)).toBe(true);
    expect(messages.some(({ text }) => text.includes('session_a') || text.includes('run_2'))).toBe(
      false,
    );
    // Stored as the exact path stores: the log, the runs index, the lease released with run.ended.
    const log = await f.w1.read('session_a');
    expect(log.map((fact) => `${fact.id}@${fact.seq}`)).toEqual([
      'f1@1',
      'f2@2',
      'f3@3',
      'f4@4',
      'f5@5',
      'f6@6',
    ]);
    expect(log[3]).toMatchObject({ workerId: 'f.w2', leaseEpoch: 1 });
    expect(await f.w1.openRuns()).toEqual([]);
    const { rows } = await f.admin.query(
      `SELECT run_id, started_seq, ended_seq FROM "${f.database.schema}".runs ORDER BY run_id`,
    );
    expect(rows).toEqual([
      { run_id: 'run_1', started_seq: 1, ended_seq: 3 },
      { run_id: 'run_2', started_seq: 4, ended_seq: 6 },
    ]);
    expect(await f.w1.leaseOf({ sessionId: 'session_a', runId: 'run_2' })).toMatchObject({
      workerId: undefined,
      live: false,
    });
    expect(await f.w1.sessions()).toEqual(['session_a']);
    await c.end();
  });

  it('refuses through the exact path, with the very error it gives, and stores nothing', async () => {
    const c = await counted();
    const lease = await f.acquired(f.w1, 'f.w1', 'run_2');
    await f.w1.append('session_a', [
      a.runStarted('f1', 'run_1'),
      a.runEnded('f2', 'run_1'),
      under(lease, a.runStarted('f3', 'run_2')),
    ]);
    c.take();
    const cases: [string, NewFact[], number, (error: unknown) => boolean][] = [
      ['a stale expectedSeq', [a.runStarted('x1', 'run_9')], 2, ConcurrencyError.isInstance],
      ['an ended run', [a.steering('x2', 'run_1')], 3, RunSealedError.isInstance],
      ['a leased run, no token', [a.steering('x3', 'run_2')], 3, RunLeasedError.isInstance],
      [
        'another epoch',
        [under({ ...lease, epoch: 2 }, a.steering('x4', 'run_2'))],
        3,
        LeaseLostError.isInstance,
      ],
      [
        'another worker',
        [under({ ...lease, workerId: 'f.w2' }, a.steering('x5', 'run_2'))],
        3,
        LeaseLostError.isInstance,
      ],
      [
        'a token for a run without a lease',
        [under(lease, a.runStarted('x6', 'run_3'))],
        3,
        LeaseLostError.isInstance,
      ],
    ];
    for (const [what, facts, expectedSeq, is] of cases) {
      const error = await c.store
        .append('session_a', facts, { expectedSeq })
        .catch((caught: unknown) => caught);
      expect(is(error), what).toBe(true);
      const exact = await c.exact(facts, { expectedSeq });
      expect({ ...(error as object), message: (error as Error).message }, what).toEqual({
        ...(exact as object),
        message: (exact as Error).message,
      });
      // The fast message (it wrote nothing), then the exact path's state read and its ROLLBACK.
      expect(c.take().map(kind), what).toEqual(['fast', 'state', 'rollback']);
    }
    await f.expire('session_a', 'run_2');
    const expired = await c.store
      .append('session_a', [under(lease, a.steering('x7', 'run_2'))], { expectedSeq: 3 })
      .catch((caught: unknown) => caught);
    expect(expired).toMatchObject({ name: 'LeaseLostError', current: { live: false } });
    expect({ ...(expired as object) }).toEqual({
      ...((await c.exact([under(lease, a.steering('x7', 'run_2'))], {
        expectedSeq: 3,
      })) as object),
    });
    expect(await f.ids(f.w2)).toEqual(['f1', 'f2', 'f3']);
    await c.end();
  });

  it('answers a retry of known ids as the exact path does: a no-op whatever expectedSeq says, the new ones appended', async () => {
    const c = await counted();
    await c.store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')], {
      expectedSeq: 0,
    });
    c.take();
    const retry = await c.store.append('session_a', [a.runStarted('f1', 'run_1')], {
      expectedSeq: 0,
    });
    expect(retry).toEqual({ appended: [], lastSeq: 2 });
    expect(retry).toEqual(await c.exact([a.runStarted('f1', 'run_1')], { expectedSeq: 0 }));
    expect(c.take().map(kind)).toEqual(['fast', 'state', 'rollback']);
    const partly = await c.store.append(
      'session_a',
      [a.steering('f2', 'run_1'), a.steering('f3', 'run_1')],
      {
        expectedSeq: 2,
      },
    );
    expect(partly.appended.map((fact) => `${fact.id}@${fact.seq}`)).toEqual(['f3@3']);
    expect(partly.lastSeq).toBe(3);
    // The fast message, then the exact path's state read, write and COMMIT.
    expect(c.take().map(kind)).toEqual(['fast', 'state', 'write', 'commit']);
    // An id twice in one append, or a run ended twice in it, never tries the fast path.
    expect(
      (
        await c.store.append('session_a', [a.steering('f4', 'run_1'), a.steering('f4', 'run_1')], {
          expectedSeq: 3,
        })
      ).appended.map((fact) => fact.seq),
    ).toEqual([4]);
    await expect(
      c.store.append('session_a', [a.runEnded('f5', 'run_1'), a.steering('f6', 'run_1')], {
        expectedSeq: 4,
      }),
    ).rejects.toSatisfy(RunSealedError.isInstance);
    expect(c.take().map(kind)).toEqual(['state', 'write', 'commit', 'state', 'rollback']);
    await c.end();
  });

  it('sends the appends of several sessions ready at once in one message; a refused part fails alone, as it would alone', async () => {
    const c = await counted();
    const b = storeFacts('session_b');
    const d = storeFacts('session_c');
    await c.store.append('session_b', [b.runStarted('b1', 'run_b')], { expectedSeq: 0 });
    c.take();
    const outcomes = await Promise.allSettled([
      c.store.append('session_c', [d.runStarted('c1', 'run_c'), d.runEnded('c2', 'run_c')], {
        expectedSeq: 0,
      }),
      c.store.append('session_b', [b.steering('b2', 'run_b')], { expectedSeq: 0 }),
      c.store.append('session_a', [a.runStarted('a1', 'run_1')], { expectedSeq: 0 }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    const refused = (outcomes[1] as PromiseRejectedResult).reason;
    expect(ConcurrencyError.isInstance(refused)).toBe(true);
    const exact = await c.exact([b.steering('b2', 'run_b')], { expectedSeq: 0 }, 'session_b');
    expect({ ...refused, message: refused.message }).toEqual({
      ...(exact as object),
      message: (exact as Error).message,
    });
    const messages = c.take();
    // One message for the three sessions (in session order), then the refused one's exact path.
    expect(messages.map(kind)).toEqual(['fast', 'state', 'rollback']);
    const parts = JSON.parse(String(messages[0]?.values?.[0])) as { s: string }[];
    expect(parts.map((part) => part.s)).toEqual(['session_a', 'session_b', 'session_c']);
    const ids = async (sessionId: string) =>
      (await f.w2.read(sessionId)).map((fact) => `${fact.id}@${fact.seq}`);
    expect(await ids('session_a')).toEqual(['a1@1']);
    expect(await ids('session_b')).toEqual(['b1@1']);
    expect(await ids('session_c')).toEqual(['c1@1', 'c2@2']);
    expect(await f.w2.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
      { sessionId: 'session_b', turnId: 'turn_1', runId: 'run_b' },
    ]);
    await c.end();
  });

  it('sends each part of a batch the server refused as a whole again alone: only the failing append fails', async () => {
    const c = await counted();
    const b = storeFacts('session_b');
    // A fact the server refuses with an SQL error (not a rule of the store's): its whole batch fails.
    await f.admin.query(
      `CREATE FUNCTION "${f.database.schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.id = 'boom' THEN RAISE EXCEPTION 'refused by a trigger'; END IF; RETURN NEW; END $$`,
    );
    await f.admin.query(
      `CREATE TRIGGER refuse BEFORE INSERT ON "${f.database.schema}".facts
       FOR EACH ROW EXECUTE FUNCTION "${f.database.schema}".refuse()`,
    );
    const outcomes = await Promise.allSettled([
      c.store.append('session_a', [a.runStarted('a1', 'run_1')], { expectedSeq: 0 }),
      c.store.append('session_b', [b.runStarted('boom', 'run_b')], { expectedSeq: 0 }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected']);
    const refused = (outcomes[1] as PromiseRejectedResult).reason;
    expect(StoreWriteError.isInstance(refused)).toBe(true);
    expect(refused.message).toMatch(/refused by a trigger/);
    // The batch of two, then each alone (session order); each failed one's ROLLBACK between.
    const messages = c.take();
    expect(messages.map(({ text }) => text.replace(/^SELECT [\s\S]*/, 'append'))).toEqual([
      'append',
      'ROLLBACK',
      'append',
      'append',
      'ROLLBACK',
    ]);
    expect(
      messages
        .filter(({ text }) => text !== 'ROLLBACK')
        .map((message) =>
          JSON.parse(String(message.values?.[0])).map((part: { s: string }) => part.s),
        ),
    ).toEqual([['session_a', 'session_b'], ['session_a'], ['session_b']]);
    expect((await f.w2.read('session_a')).map((fact) => fact.id)).toEqual(['a1']);
    expect(await f.w2.read('session_b')).toEqual([]);
    await c.end();
  });

  it('sends a part larger than a batch alone at once: the appends of other sessions commit while it is on its way', async () => {
    await f.w1.sessions();
    const hold = await holdFactInserts(f.admin, f.database.schema, 'big');
    const b = storeFacts('session_b');
    // Larger than a batch (4 MiB of facts): it goes alone.
    const big = f.w1.append('session_a', [a.steering('big', 'run_1', 'x'.repeat(5_000_000))], {
      expectedSeq: 0,
    });
    await hold.reached();
    // Held before its COMMIT: another session's appends go on meanwhile, batch after batch.
    await f.w1.append('session_b', [b.runStarted('b1', 'run_b')], { expectedSeq: 0 });
    await f.w1.append('session_b', [b.steering('b2', 'run_b')], { expectedSeq: 1 });
    expect((await f.w2.read('session_b')).map((fact) => fact.id)).toEqual(['b1', 'b2']);
    await hold.release();
    expect((await big).appended.map((fact) => fact.id)).toEqual(['big']);
    const [stored] = await f.w2.read('session_a');
    expect(stored?.type === 'steering.received' && stored.text.length).toBe(5_000_000);
  });

  it('notifies only once an append committed, never for one that fell back and was refused', async () => {
    const listener = new pg.Client({ connectionString: f.database.url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (message) => payloads.push(message.payload ?? ''));
    const schema = postgresSchema(f.database.schema);
    await listener.query(`LISTEN "${notificationChannel(schema, 'f', 'session_a')}"`);
    await f.w1.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 });
    await expect(
      f.w1.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 0 }),
    ).rejects.toSatisfy(ConcurrencyError.isInstance);
    const hold = await holdFactInserts(f.admin, f.database.schema);
    const held = f.w1.append('session_a', [a.steering('f3', 'run_1')], { expectedSeq: 1 });
    await hold.reached();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(payloads).toEqual(['1']);
    await hold.release();
    await held;
    while (payloads.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(payloads).toEqual(['1', '2']);
    await listener.end();
  });

  it('is a StoreWriteError when the connection dies before COMMIT, with nothing stored', async () => {
    await f.w1.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 });
    const hold = await holdFactInserts(f.admin, f.database.schema);
    const append = f.w1
      .append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 1 })
      .catch((caught: unknown) => caught);
    const pid = await hold.reached();
    await f.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const error = await append;
    expect(StoreWriteError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /may or may not be stored: read the session and retry/,
    );
    await hold.release();
    expect(await f.ids(f.w2)).toEqual(['f1']);
    // The store goes on (the broken connection was dropped); a retry with the same id goes in.
    await f.w1.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 1 });
    expect(await f.ids(f.w2)).toEqual(['f1', 'f2']);
  });
});

// The races of architecture/workers.md ("Leases and fencing"), with appends that take the fast path.
describe('postgresStore fast append racing lease changes', () => {
  const f = useLeaseFixture();

  it('refuses an append of the old epoch that waited on the session while the run was taken over', async () => {
    const old = await f.acquired(f.w1, 'f.w1');
    await f.w1.append('session_a', [under(old, a.runStarted('f1', 'run_1'))], { expectedSeq: 0 });
    const blocker = await f.admin.connect();
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT 1 FROM "${f.database.schema}".sessions WHERE session_id = 'session_a' FOR UPDATE`,
    );
    const late = f.w1
      .append('session_a', [under(old, a.steering('f2', 'run_1'))], { expectedSeq: 1 })
      .then(
        () => 'stored',
        (error: unknown) => error,
      );
    for (;;) {
      const { rows } = await f.admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%"${f.database.schema}".append_facts(%`],
      );
      if (rows.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await f.expire('session_a', 'run_1');
    const [taken] = await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs });
    await blocker.query('COMMIT');
    blocker.release();
    const outcome = await late;
    expect(LeaseLostError.isInstance(outcome)).toBe(true);
    expect(outcome).toMatchObject({ epoch: 1, current: { workerId: 'f.w2', epoch: taken?.epoch } });
    expect(await f.ids(f.w2)).toEqual(['f1']);
  });

  it('makes a takeover wait for a fast append of the old epoch that passed its lease check, so the new holder reads it', async () => {
    const attempt = await f.w1.acquireLease({
      sessionId: 'session_a',
      runId: 'run_1',
      workerId: 'f.w1',
      leaseMs: 1_500,
    });
    const { lease } = attempt as { acquired: true; lease: RunLease };
    await f.w1.sessions();
    const hold = await holdFactInserts(f.admin, f.database.schema);
    const order: string[] = [];
    const append = f.w1
      .append('session_a', [under(lease, a.runStarted('f1', 'run_1'))], { expectedSeq: 0 })
      .then(() => order.push('f.w1 committed'));
    await hold.reached();
    // The lease runs out while the append waits to commit (the database's own clock).
    while ((await f.w2.leaseOf({ sessionId: 'session_a', runId: 'run_1' }))?.live) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Its row is locked FOR SHARE by the append: a takeover skips it, an acquisition waits.
    expect(await f.w2.takeOverExpiredLeases({ workerId: 'f.w2', leaseMs })).toEqual([]);
    const acquire = f.w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'f.w2', leaseMs })
      .then((next) => {
        order.push('f.w2 acquired');
        return next;
      });
    await hold.lockWait(`%INTO "${f.database.schema}".sessions AS session%`);
    await hold.release();
    await append;
    expect(await acquire).toMatchObject({ acquired: true, lease: { workerId: 'f.w2', epoch: 2 } });
    expect(order).toEqual(['f.w1 committed', 'f.w2 acquired']);
    expect(await f.ids(f.w2)).toEqual(['f1']);
  });

  it("makes a run's first lease wait for a fast append without a lease in flight on the session", async () => {
    await f.w1.sessions();
    const hold = await holdFactInserts(f.admin, f.database.schema);
    const order: string[] = [];
    const append = f.w1
      .append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 })
      .then(() => order.push('appended'));
    await hold.reached();
    const acquire = f.w2
      .acquireLease({ sessionId: 'session_a', runId: 'run_1', workerId: 'f.w2', leaseMs })
      .then((attempt) => {
        order.push('acquired');
        return attempt;
      });
    await hold.lockWait(`%INTO "${f.database.schema}".sessions AS session%`);
    await hold.release();
    await append;
    expect(await acquire).toMatchObject({ acquired: true, lease: { epoch: 1 } });
    expect(order).toEqual(['appended', 'acquired']);
    await expect(
      f.w1.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 1 }),
    ).rejects.toSatisfy(RunLeasedError.isInstance);
  });

  /**
   * Three stores (workers) race appends under their leases, plain appends, acquisitions,
   * takeovers, expiries and releases of the runs of `sessions` sessions, a few at a time; every
   * stored fact must come from the lease it claims, in epoch order, and every refusal be the rule's
   * own error. With several sessions, a store's appends to different sessions meet in one batch
   * (group commit), each with its own outcome.
   */
  async function leaseRace(sessions: number, seed: number, numRuns: number) {
    const workers = [f.w1, f.w2, f.database.open()];
    await f.w1.sessions();
    let round = 0;
    // With several sessions, mostly appends, from two of the stores: so that a store's batch
    // often holds the appends of several sessions.
    const several = sessions > 1;
    const command = fc.record({
      worker: fc.integer({ min: 0, max: several ? 1 : 2 }),
      session: fc.integer({ min: 0, max: sessions - 1 }),
      action: fc.constantFrom(
        'append',
        'append',
        'plain',
        ...(several ? (['append', 'append', 'plain'] as const) : []),
        'acquire',
        'takeover',
        'expire',
        'release',
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(command, { minLength: 1, maxLength: 3 * sessions }), { maxLength: 14 }),
        async (batches) => {
          round += 1;
          const states = Array.from({ length: sessions }, (_, index) => ({
            sessionId: `session_${round}_${index}`,
            facts: storeFacts(`session_${round}_${index}`),
            held: [undefined, undefined, undefined] as (RunLease | undefined)[],
            granted: new Map<number, string>(),
            stored: new Set<string>(),
            refused: new Set<string>(),
          }));
          let next = 0;
          for (const batch of batches) {
            // The batch's appends read first, then all append at once: a store's appends to
            // different sessions meet in one batch, and the same session's race.
            let appends = 0;
            let read = 0;
            let allRead = () => {};
            const reads = new Promise<void>((resolve) => {
              allRead = resolve;
            });
            await Promise.all(
              batch.map(async ({ worker, session, action }) => {
                const state = states[session] as (typeof states)[number];
                const { sessionId, facts, held } = state;
                const grant = (lease: RunLease | undefined) => {
                  if (lease === undefined) return;
                  expect(state.granted.has(lease.epoch)).toBe(false);
                  state.granted.set(lease.epoch, lease.workerId);
                  held[worker] = lease;
                };
                const store = workers[worker] as PostgresStore;
                const workerId = `w${worker}`;
                const lease = held[worker];
                if ((action === 'append' && lease !== undefined) || action === 'plain') {
                  appends += 1;
                  next += 1;
                  const id = `f${next}`;
                  const plain = facts.steering(id, 'run_1');
                  const fact =
                    action === 'plain' || lease === undefined ? plain : under(lease, plain);
                  // The driver's view of the session: what its store read last.
                  const expectedSeq = (await store.read(sessionId)).length;
                  read += 1;
                  if (read === appends) allRead();
                  await reads;
                  await store.append(sessionId, [fact], { expectedSeq }).then(
                    () => state.stored.add(id),
                    (error: unknown) => {
                      state.refused.add(id);
                      if (ConcurrencyError.isInstance(error)) return;
                      if (action === 'plain') {
                        expect(RunLeasedError.isInstance(error)).toBe(true);
                        return;
                      }
                      expect(LeaseLostError.isInstance(error)).toBe(true);
                      held[worker] = undefined;
                    },
                  );
                } else if (action === 'acquire') {
                  const attempt = await store.acquireLease({
                    sessionId,
                    runId: 'run_1',
                    workerId,
                    leaseMs,
                  });
                  if (attempt.acquired) grant(attempt.lease);
                } else if (action === 'takeover') {
                  const taken = await store.takeOverExpiredLeases({ workerId, leaseMs, limit: 50 });
                  // A scan may take the runs of other sessions too: each is that session's grant.
                  for (const other of states) {
                    const mine = taken.find((candidate) => candidate.sessionId === other.sessionId);
                    if (mine === undefined) continue;
                    expect(other.granted.has(mine.epoch)).toBe(false);
                    other.granted.set(mine.epoch, mine.workerId);
                    other.held[worker] = mine;
                  }
                } else if (action === 'expire') {
                  await f.expire(sessionId, 'run_1');
                } else if (action === 'release' && lease !== undefined) {
                  await store.releaseLease({ lease });
                  held[worker] = undefined;
                }
              }),
            );
          }
          for (const { sessionId, stored, refused, granted } of states) {
            const log = await f.w1.read(sessionId);
            expect(log.map((fact) => fact.seq)).toEqual(log.map((_, index) => index + 1));
            expect(log.map((fact) => fact.id).sort()).toEqual([...stored].sort());
            expect(log.some((fact) => refused.has(fact.id))).toBe(false);
            const epochs = log
              .filter((fact) => fact.leaseEpoch !== undefined)
              .map((fact) => fact.leaseEpoch ?? 0);
            expect(epochs).toEqual([...epochs].sort((x, y) => x - y));
            for (const fact of log) {
              if (fact.leaseEpoch !== undefined)
                expect(granted.get(fact.leaseEpoch)).toBe(fact.workerId);
            }
          }
        },
      ),
      { numRuns, seed },
    );
  }

  it('keeps every fact from the lease it claims when fast appends race acquisitions, takeovers, expiries and releases', async () => {
    await leaseRace(1, 1314, 12);
  });

  it('keeps it when each store batches the appends of three sessions racing their leases', async () => {
    await leaseRace(3, 2612, 25);
  });
});
