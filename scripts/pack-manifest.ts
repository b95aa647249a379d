// The package.json that ships: npm pack (and publish) run `prepack` before reading the files
// and `postpack` after. `strip` drops what only this repository's own install uses (the
// dev-only `allowScripts`, which names the dependencies whose install scripts may run) and
// keeps the original beside it; `restore` puts the original back. A strip finding an old
// backup (a pack that failed before its postpack) restores that first, so nothing is lost.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const manifest = 'package.json';
const backup = 'package.json.prepack';
/** Fields of the repository's package.json that never ship. */
const devOnly = ['allowScripts'];

const command = process.argv[2];
if (command === 'strip') {
  if (existsSync(backup)) renameSync(backup, manifest);
  const text = readFileSync(manifest, 'utf8');
  const shipped = JSON.parse(text) as Record<string, unknown>;
  for (const field of devOnly) delete shipped[field];
  writeFileSync(backup, text);
  writeFileSync(manifest, `${JSON.stringify(shipped, null, 2)}\n`);
} else if (command === 'restore') {
  if (existsSync(backup)) renameSync(backup, manifest);
} else {
  console.error('usage: node scripts/pack-manifest.ts strip|restore');
  process.exit(2);
}
