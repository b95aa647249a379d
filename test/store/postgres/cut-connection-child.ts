// A process using postgresStore while its database restarts (test/store/postgres/postgres-unavailable.test.ts):
// opens the store, says `open`, waits for `go` on stdin, then makes 6 calls and prints the name of
// each one's error (or `ok`). An uncaught 'error' event from a connection ends it with code 1.
import { createInterface } from 'node:readline';
import { postgresStore } from '../../../store/postgres/postgres-store.ts';

const [url, schema] = process.argv.slice(2);
const store = postgresStore({ connectionString: url, schema });
await store.sessions();
console.log('open');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;
for (let call = 0; call < 6; call += 1) {
  const outcome = await store.sessions().then(
    () => 'ok',
    (error: Error) => error.name,
  );
  console.log(outcome);
  // Each call after the connection it got was cut: give the 'error' event its turn.
  await new Promise((resolve) => setTimeout(resolve, 20));
}
await store.close();
console.log('closed');
