import { randomBytes } from 'node:crypto';

/** Half of a UTF-16 surrogate pair standing alone. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * What is wrong with a session, run, turn, fact or call id as a key, or `undefined` when it is
 * well-formed: a lone surrogate would be stored as U+FFFD in UTF-8 (a file name, a PostgreSQL
 * text column), so `x\ud800`, `x\udbff` and `x\ufffd` would be one session; a NUL cannot be
 * stored in a PostgreSQL text column or a file name at all.
 */
export function idProblem(id: string): string | undefined {
  const nul = id.indexOf('\u0000');
  if (nul !== -1) return `it holds a NUL character (at index ${nul})`;
  const lone = loneSurrogate.exec(id);
  if (lone === null) return undefined;
  const code = lone[0].charCodeAt(0).toString(16);
  return `it is not well-formed UTF-16 (a lone surrogate \\u${code} at index ${lone.index}), so it would be stored as another id`;
}

/** Makes a new unique id with the given prefix (`run`, `step`, `fact`, …). */
export type IdGenerator = (prefix: string) => string;

/**
 * The default id generator: `<prefix>_<time base36><random hex>`. Ids sort roughly by creation
 * time and are unique across processes.
 */
export function createIdGenerator(options: { now?: () => number } = {}): IdGenerator {
  const now = options.now ?? Date.now;
  // Random bytes drawn in batches: one system call per 1,024 ids instead of one per id.
  let pool = randomBytes(6 * 1024);
  let offset = 0;
  return (prefix) => {
    if (offset === pool.length) {
      pool = randomBytes(pool.length);
      offset = 0;
    }
    offset += 6;
    return `${prefix}_${now().toString(36)}${pool.toString('hex', offset - 6, offset)}`;
  };
}

/**
 * A deterministic id generator for tests and replays: `<prefix>_1`, `<prefix>_2`, … counted
 * per prefix.
 *
 * @example
 * const generateId = sequentialIds();
 * generateId('run'); // 'run_1'
 * generateId('run'); // 'run_2'
 * generateId('step'); // 'step_1'
 */
export function sequentialIds(): IdGenerator {
  const counters = new Map<string, number>();
  return (prefix) => {
    const next = (counters.get(prefix) ?? 0) + 1;
    counters.set(prefix, next);
    return `${prefix}_${next}`;
  };
}
