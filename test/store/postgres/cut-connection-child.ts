// A process using postgresStore while its database restarts (test/store/postgres/postgres-unavailable.test.ts):
// opens the store, says `open`, waits for `go` on stdin, then makes 6 calls and prints the name of
// each one's error (or `ok`). An uncaught 'error' event from a connection ends it with code 1.
// The calls alternate a read (pg-pool's own `query`, which listens for its connection's errors)
// and an append (a connection taken with `pool.connect()`, whose listener is the store's own:
// issue 26, defect 2 was there).
import { createInterface } from 'node:readline';
import { postgresStore } from '../../../store/postgres/postgres-store.ts';
import { storeFacts } from '../store-facts.ts';

const [url, schema] = process.argv.slice(2);
const store = postgresStore({ connectionString: url, schema });
await store.sessions();
console.log('open');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;
const facts = storeFacts('s1');
for (let call = 0; call < 6; call += 1) {
  const made =
    call % 2 === 0 ? store.sessions() : store.append('s1', [facts.runStarted(`f${call}`, 'run_1')]);
  const outcome = await made.then(
    () => 'ok',
    (error: Error) => error.name,
  );
  console.log(outcome);
  // Each call after the connection it got was cut: give the 'error' event its turn.
  await new Promise((resolve) => setTimeout(resolve, 20));
}
await store.close();
console.log('closed');
