import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * A store module of another checkout (the A/B benchmarks load an older one beside this one):
 * `store/<folder>/<file>` since each store has its folder, `store/<file>` before.
 */
export function storeModule(root: string, file: string): string {
  const foldered = path.join(root, 'store', file);
  return existsSync(foldered) ? foldered : path.join(root, 'store', path.basename(file));
}
