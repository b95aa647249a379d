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

/** What a message of the append is: the fast path's, or the exact path's state read, write or ROLLBACK. */
const kind = (text: string) =>
  text === 'ROLLBACK'
    ? 'rollback'
    : text.includes('belief AS')
      ? 'fast'
      : text.startsWith('BEGIN')
        ? 'state'
        : 'write';

/** A pool that records every message a checked-out connection sends (one message, one round trip). */
function countingPool(url: string) {
  const real = new pg.Pool({ connectionString: url, max: 4 });
  const messages: string[] = [];
  const pool: PgPool = {
    query: (text, values) => real.query(text, values),
    connect: async () => {
      const client = (await real.connect()) as unknown as PgPoolClient;
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== 'query') return Reflect.get(target, property, receiver);
          return (text: string, values?: unknown[]) => {
            messages.push(text);
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
    take(): string[] {
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
async function holdFactInserts(admin: pg.Pool, schema: string) {
  const key = Math.floor(Math.random() * 1_000_000_000);
  await admin.query(
    `CREATE FUNCTION "${schema}".hold_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN PERFORM pg_advisory_xact_lock_shared(${key}); RETURN NEW; END $$`,
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
      async exact(facts: NewFact[], options: AppendOptions = {}) {
        const where = `postgresStore.append('session_a')`;
        return appendFacts({
          pool: exactPool as unknown as PgPool,
          schema,
          sessionId: 'session_a',
          candidates: validateNewFacts(facts, options, { where, sessionId: 'session_a' }),
          expectedSeq: options.expectedSeq,
          where,
          exactOnly: true,
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
    expect(messages.every((text) => text.startsWith('BEGIN;') && text.endsWith('COMMIT'))).toBe(
      true,
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
    // The fast message, then the exact path's two.
    expect(c.take().map(kind)).toEqual(['fast', 'state', 'write']);
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
    expect(c.take().map(kind)).toEqual(['state', 'write', 'state', 'rollback']);
    await c.end();
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
        [`%"${f.database.schema}".sessions%`],
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

  it('keeps every fact from the lease it claims when fast appends race acquisitions, takeovers, expiries and releases', async () => {
    const workers = [f.w1, f.w2, f.database.open()];
    await f.w1.sessions();
    let round = 0;
    const command = fc.record({
      worker: fc.integer({ min: 0, max: 2 }),
      action: fc.constantFrom(
        'append',
        'append',
        'plain',
        'acquire',
        'takeover',
        'expire',
        'release',
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(command, { minLength: 1, maxLength: 3 }), { maxLength: 14 }),
        async (batches) => {
          round += 1;
          const sessionId = `session_${round}`;
          const facts = storeFacts(sessionId);
          const held: (RunLease | undefined)[] = [undefined, undefined, undefined];
          const granted = new Map<number, string>();
          const stored = new Set<string>();
          const refused = new Set<string>();
          let next = 0;
          const grant = (worker: number, lease: RunLease | undefined) => {
            if (lease === undefined) return;
            expect(granted.has(lease.epoch)).toBe(false);
            granted.set(lease.epoch, lease.workerId);
            held[worker] = lease;
          };
          for (const batch of batches) {
            await Promise.all(
              batch.map(async ({ worker, action }) => {
                const store = workers[worker] as PostgresStore;
                const workerId = `w${worker}`;
                const lease = held[worker];
                if ((action === 'append' && lease !== undefined) || action === 'plain') {
                  next += 1;
                  const id = `f${next}`;
                  const plain = facts.steering(id, 'run_1');
                  const fact =
                    action === 'plain' || lease === undefined ? plain : under(lease, plain);
                  // The driver's view of the session: what its store read last.
                  const expectedSeq = (await store.read(sessionId)).length;
                  await store.append(sessionId, [fact], { expectedSeq }).then(
                    () => stored.add(id),
                    (error: unknown) => {
                      refused.add(id);
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
                  if (attempt.acquired) grant(worker, attempt.lease);
                } else if (action === 'takeover') {
                  const taken = await store.takeOverExpiredLeases({ workerId, leaseMs, limit: 50 });
                  grant(
                    worker,
                    taken.find((candidate) => candidate.sessionId === sessionId),
                  );
                } else if (action === 'expire') {
                  await f.expire(sessionId, 'run_1');
                } else if (action === 'release' && lease !== undefined) {
                  await store.releaseLease({ lease });
                  held[worker] = undefined;
                }
              }),
            );
          }
          const log = await f.w1.read(sessionId);
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
        },
      ),
      { numRuns: 12, seed: 1314 },
    );
  });
});
