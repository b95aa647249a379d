// Lock-test child: opens a lowdbStore and reports `{"ready":true}`, or the error it got
// (`{"error":"StoreLockedError","pid":123}`); it holds the store until its stdin closes.
// Usage: node test/store/folder/hold-child.ts <dir>
import { type EventStore, StoreLockedError } from '../../../store/event-store.ts';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';

const [dir] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: hold-child.ts <dir>');
let store: EventStore;
try {
  store = lowdbStore({ dir });
} catch (error) {
  const pid = StoreLockedError.isInstance(error) ? error.pid : undefined;
  process.stdout.write(`${JSON.stringify({ error: (error as Error).name, pid })}\n`);
  process.exit(0);
}
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void store.close().then(() => process.exit(0));
});
