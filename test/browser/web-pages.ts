import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'vite';
import { repoRoot } from '../examples/example-process.ts';

/**
 * Builds the web example's pages into a folder of the test's own, for `startServer({ webDist })`
 * or a server process's TURNLOG_WEB_DIST. Browser test files run at once in several workers: a
 * build into the shared examples/web/dist (emptied first) could pull the pages from under
 * another file's server.
 */
export async function buildWebPages(): Promise<string> {
  const outDir = mkdtempSync(path.join(tmpdir(), 'turnlog-web-pages-'));
  await build({
    configFile: path.join(repoRoot, 'examples/web/vite.config.ts'),
    logLevel: 'error',
    build: { outDir, emptyOutDir: true },
  });
  return outDir;
}
