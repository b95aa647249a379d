import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Where the browser tests look for Chromium: `CHROMIUM_PATH`, else Debian's package. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** True when a Chromium is installed where the browser tests look. */
export const hasChromium = existsSync(chromiumPath);

/** The one line `npm test` prints when the browser tests cannot run. */
export const noChromiumLine = `browser tests did not run: no Chromium at ${chromiumPath} (install it with: sudo apt-get install -y chromium, or set CHROMIUM_PATH)`;

/**
 * Headless Chromium with a fresh profile (playwright's own browser download does not work
 * here, so it drives the system's): no sandbox, no GPU, no network of its own. `extraArgs` go
 * after the defaults (`--host-resolver-rules=…` to point a name at 127.0.0.1).
 */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), 'turnlog-chromium-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1100, height: 760 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}
