// Retention crash-test child: opens a store and purges (with or without archives) or imports a
// folder of archives, printing `ready`, then `done <sessionId> <outcome>` per session decided. The
// parent SIGKILLs it at random moments.
// Usage: node retention-child.ts <lowdb|postgres> <dir | url#schema> <purge|archive|import> <archiveDir>
import { readFile } from 'node:fs/promises';
import { lowdbStore } from '../../../store/folder/lowdb-store.ts';
import { postgresStore } from '../../../store/postgres/postgres-store.ts';
import { archiveFiles } from '../../../store/retention/archive-files.ts';
import { purgeSessions } from '../../../store/retention/purge-sessions.ts';
import { importSession } from '../../../store/retention/session-archive.ts';
import { campaignEndedBefore } from './retention-sessions.ts';

const [kind, target, mode, archiveDir] = process.argv.slice(2);
if (kind === undefined || target === undefined || mode === undefined || archiveDir === undefined) {
  throw new Error('usage: retention-child.ts <lowdb|postgres> <target> <mode> <archiveDir>');
}
const [url, schema] = target.split('#');
const store =
  kind === 'lowdb'
    ? lowdbStore({ dir: target, segmentSize: 3 })
    : postgresStore({ connectionString: url, schema });
await store.sessions();
process.stdout.write('ready\n');

if (mode === 'import') {
  for (const file of await archiveFiles(archiveDir)) {
    const { sessionId, outcome } = await importSession(store, await readFile(file, 'utf8'), {
      file,
    });
    process.stdout.write(`done ${encodeURIComponent(sessionId)} ${outcome}\n`);
  }
} else {
  await purgeSessions(store, {
    endedBefore: campaignEndedBefore,
    batchSize: 3,
    ...(mode === 'archive' ? { archiveDir } : {}),
    onProgress: ({ sessionId, outcome }) =>
      process.stdout.write(`done ${encodeURIComponent(sessionId)} ${outcome}\n`),
  });
}
await store.close();
process.stdout.write('finished\n');
