import { randomBytes } from 'node:crypto';

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
