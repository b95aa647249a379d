import type { OtelApi } from './otel-types.ts';

let loading: Promise<OtelApi | undefined> | undefined;

/**
 * Loads `@opentelemetry/api`, an optional peer, once per process: `undefined` when it is not
 * installed (nothing is recorded then, and nothing fails). One copy of the API in an app shares
 * its registered providers with every other copy (the API keeps them on a global), so the
 * application's SDK, whichever copy it imported, is the one turnlog's spans reach.
 */
export function loadOpenTelemetry(): Promise<OtelApi | undefined> {
  loading ??= import('@opentelemetry/api').then(
    (api): OtelApi => api,
    (error: unknown) => {
      if (!isModuleNotFound(error)) {
        const reason = error instanceof Error ? error.message : String(error);
        process.emitWarning(
          `turnlog: @opentelemetry/api is installed but could not be loaded (${reason}); runs are not traced`,
          { code: 'TURNLOG_TELEMETRY_UNAVAILABLE' },
        );
      }
      return undefined;
    },
  );
  return loading;
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}
