// Serves the built pages of examples/web (vite's output in examples/web/dist) to the browser.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where `npm run web` (vite build) puts the pages. */
export const webDist = fileURLToPath(new URL('../dist', import.meta.url));

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
};

/** The page behind each short path. */
const pages: Record<string, string> = { '/': 'index.html', '/log': 'log.html' };

/**
 * The built file for a URL path (`/`, `/log`, `/assets/…`), or `undefined` when there is none.
 * Paths that leave the dist folder are never served.
 */
export async function staticFile(
  urlPath: string,
  root = webDist,
): Promise<{ body: Buffer; contentType: string } | undefined> {
  let relative: string;
  try {
    relative = pages[urlPath] ?? decodeURIComponent(urlPath).replace(/^\/+/, '');
  } catch {
    return undefined;
  }
  const file = path.resolve(root, relative);
  if (!file.startsWith(`${path.resolve(root)}${path.sep}`)) return undefined;
  const info = await stat(file).catch(() => undefined);
  if (info === undefined || !info.isFile()) return undefined;
  return {
    body: await readFile(file),
    contentType: contentTypes[path.extname(file)] ?? 'application/octet-stream',
  };
}
