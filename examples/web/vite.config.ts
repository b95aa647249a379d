// Builds the web example's two pages (the chat and the log viewer) into examples/web/dist,
// which examples/embedded-server.ts serves: `npm run web` builds them and starts the server.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    rolldownOptions: {
      input: { chat: `${root}index.html`, log: `${root}log.html` },
      // swr (inside @ai-sdk/react) marks itself 'use client', which means nothing in a page bundle.
      onLog(level, log, handler) {
        if (log.code !== 'MODULE_LEVEL_DIRECTIVE') handler(level, log);
      },
    },
  },
});
