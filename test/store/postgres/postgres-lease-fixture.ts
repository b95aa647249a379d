import type pg from 'pg';
import { afterEach, beforeEach } from 'vitest';
import type { NewFact } from '../../../events/facts.ts';
import type { PgPool, PgPoolClient } from '../../../store/postgres/postgres-connection.ts';
import type { PostgresStore } from '../../../store/postgres/postgres-store.ts';
import type { RunLease } from '../../../store/run-leases.ts';
import { testSchema } from '../../helpers/postgres.ts';

/** The lease time the tests give (long: a lease expires only when a test says so). */
export const leaseMs = 60_000;

/** A fact appended under `lease` (its fencing token in the envelope). */
export const under = (lease: RunLease, fact: NewFact): NewFact => ({
  ...fact,
  workerId: lease.workerId,
  leaseEpoch: lease.epoch,
});

/**
 * A schema per test with two stores on it (`w1`, `w2`: two workers) and an admin pool; read
 * the fields inside tests (they are set anew before each).
 */
export function useLeaseFixture() {
  const fixture = {} as {
    database: ReturnType<typeof testSchema>;
    admin: pg.Pool;
    w1: PostgresStore;
    w2: PostgresStore;
  };
  beforeEach(() => {
    fixture.database = testSchema('leases');
    fixture.admin = fixture.database.pool();
    fixture.w1 = fixture.database.open();
    fixture.w2 = fixture.database.open();
  });
  afterEach(async () => {
    await fixture.admin.end();
    await fixture.database.drop();
  });
  return Object.assign(fixture, {
    /** The lease's time runs out now (the database's clock moved on, without waiting for it). */
    async expire(sessionId: string, runId: string) {
      await fixture.admin.query(
        `UPDATE "${fixture.database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second'
         WHERE session_id = $1 AND run_id = $2`,
        [sessionId, runId],
      );
    },
    async acquired(store: PostgresStore, workerId: string, runId = 'run_1') {
      const attempt = await store.acquireLease({
        sessionId: 'session_a',
        runId,
        workerId,
        leaseMs,
      });
      if (!attempt.acquired) throw new Error(`${workerId} did not get ${runId}`);
      return attempt.lease;
    },
    /** The ids of session_a's facts, in seq order. */
    async ids(store: PostgresStore) {
      return (await store.read('session_a')).map((fact) => fact.id);
    },
  });
}

/** Resolves once some connection waits for a lock (the blocked statement reached the server). */
export async function waitForLockWait(admin: pg.Pool): Promise<void> {
  for (;;) {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if ((rows[0]?.waiting ?? 0) > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A pool whose COMMITs (a query ending in COMMIT) can be held back, to stop a transaction between
 * its checks and its commit.
 */
export function gatedCommits(url: string) {
  // biome-ignore lint/suspicious/noExplicitAny: the pg module, loaded as the store loads it
  let real: any;
  let holding = false;
  let release!: () => void;
  let reachedGate!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reached = new Promise<void>((resolve) => {
    reachedGate = resolve;
  });
  const open = async () => {
    real ??= new (await import('pg')).default.Pool({ connectionString: url, max: 4 });
    return real;
  };
  const pool: PgPool = {
    query: async (text, values) => (await open()).query(text, values),
    connect: async () => {
      const client = (await (await open()).connect()) as PgPoolClient;
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== 'query') return Reflect.get(target, property, receiver);
          return async (text: string, values?: unknown[]) => {
            if (/\bCOMMIT$/.test(text) && holding) {
              holding = false;
              reachedGate();
              await released;
            }
            return target.query(text, values);
          };
        },
      });
    },
    end: async () => {},
  };
  return {
    pool,
    reached,
    hold: () => {
      holding = true;
    },
    release,
    end: async () => (await open()).end(),
  };
}
