import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Prints one line when no Chromium is installed for test/browser/.
    globalSetup: ['test/browser/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
