// Crash-test child: appends to a few sessions of a lowdbStore concurrently, forever, and prints
// `ack <session> <seq>` after each append resolves. The parent SIGKILLs it at random moments.
// Usage: node test/store/folder/append-child.ts <dir> <segmentSize> <session>...
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { crashBatchSize, crashFact } from './crash-facts.ts';

const [dir, segmentSize, ...sessions] = process.argv.slice(2);
if (dir === undefined || segmentSize === undefined || sessions.length === 0) {
  throw new Error('usage: append-child.ts <dir> <segmentSize> <session>...');
}
const store = lowdbStore({ dir, segmentSize: Number(segmentSize) });
process.stdout.write('ready\n');

async function appendForever(sessionId: string): Promise<void> {
  let lastSeq = (await store.read(sessionId)).length;
  for (let k = 0; k < 100_000; k += 1) {
    const count = crashBatchSize(k);
    const facts = Array.from({ length: count }, (_, offset) =>
      crashFact(sessionId, lastSeq + 1 + offset),
    );
    const result = await store.append(sessionId, facts, { expectedSeq: lastSeq });
    lastSeq = result.lastSeq;
    // Pipes are written synchronously on Linux and macOS: once printed, the parent can see it.
    process.stdout.write(`ack ${encodeURIComponent(sessionId)} ${lastSeq}\n`);
  }
}

await Promise.all(sessions.map(appendForever));
