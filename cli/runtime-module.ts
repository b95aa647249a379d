import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RuntimeOptions } from '../runtime.ts';
import { CliError } from './cli-error.ts';
import type { CommandContext } from './command-definition.ts';

/**
 * Loads a `--runtime` module: its default export (or its export named `runtimeOptions`) is the
 * options the application passes to `createRuntime`, or a function (sync or async) returning
 * them. Options rather than a built runtime, because `replay` builds a runtime of its own from
 * them (a recorded model, a memory store, recorded tool results) and `check` must not open the
 * application's store. Their `store` is left out: the CLI uses the store its options select.
 *
 * @example
 * // my-runtime.ts
 * export default () => ({ model: openai('gpt-5'), tools: { sendInvoice }, policy, system });
 */
export async function loadRuntimeOptions(file: string, cwd: string): Promise<RuntimeOptions> {
  const url = pathToFileURL(path.resolve(cwd, file)).href;
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError({
      message: `turnlog: --runtime ${file} cannot be loaded: ${error instanceof Error ? error.message : String(error)}`,
      exit: 'runtimeModule',
      cause: error,
    });
  }
  const exported = loaded.default ?? loaded.runtimeOptions;
  const options = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (typeof options !== 'object' || options === null || !('model' in options)) {
    throw new CliError({
      message: `turnlog: --runtime ${file} must export default (or as runtimeOptions) the options of createRuntime, or a function returning them: an object with at least model (and the tools, policy and system the application runs with)`,
      exit: 'runtimeModule',
    });
  }
  const { store: _store, ...rest } = options as RuntimeOptions;
  return rest;
}

/** The `--runtime` module's options of a command that cannot do without them. */
export async function requiredRuntimeOptions(context: CommandContext): Promise<RuntimeOptions> {
  const options = await context.runtimeOptions();
  if (options !== undefined) return options;
  throw new CliError({
    message: 'turnlog: this command needs --runtime FILE (or TURNLOG_RUNTIME)',
    exit: 'usage',
  });
}
