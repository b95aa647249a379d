import path from 'node:path';
import type { PartialSnapshot } from '../../events/facts.ts';
import { boundPartial, partialProblem } from '../bound-partial.ts';
import { DurableFileAdapter } from './durable-file-adapter.ts';
import { sessionFolderName } from './session-files.ts';
import { errorCode, type StoreFs } from './store-fs.ts';

const utf8 = new TextDecoder();

/**
 * The partial snapshot slots of `lowdbStore`: one small JSON file per session, overwritten by
 * temp file + rename (never torn by a process kill) but not fsynced — the slot is a display aid
 * for the step in flight, not part of the log, so it is not worth a disk flush per save. A slot
 * file that does not parse (possible after power loss) reads as no partial.
 */
export class PartialFiles {
  readonly #fs: StoreFs;
  readonly #dir: string;
  readonly #maxChars: number;
  /** The last operation per session: operations on one slot run in call order. */
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(options: { fs: StoreFs; dir: string; maxChars: number }) {
    this.#fs = options.fs;
    this.#dir = options.dir;
    this.#maxChars = options.maxChars;
  }

  save(sessionId: string, partial: PartialSnapshot): Promise<void> {
    const bounded = boundPartial(partial, {
      maxChars: this.#maxChars,
      where: 'lowdbStore.savePartial',
      sessionId,
    });
    return this.#chain(sessionId, () =>
      new DurableFileAdapter<PartialSnapshot>(this.#file(sessionId), {
        fsync: false,
        fs: this.#fs,
      }).write(bounded),
    );
  }

  load(sessionId: string): Promise<PartialSnapshot | undefined> {
    return this.#chain(sessionId, async () => {
      let text: string;
      try {
        text = utf8.decode(await this.#fs.readFile(this.#file(sessionId)));
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
      try {
        const value: unknown = JSON.parse(text);
        return partialProblem(value) === undefined ? (value as PartialSnapshot) : undefined;
      } catch {
        return undefined;
      }
    });
  }

  clear(sessionId: string): Promise<void> {
    return this.#chain(sessionId, async () => {
      await this.#fs.unlink(this.#file(sessionId)).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') throw error;
      });
    });
  }

  #file(sessionId: string): string {
    return path.join(this.#dir, `${sessionFolderName(sessionId)}.json`);
  }

  #chain<TResult>(sessionId: string, task: () => Promise<TResult>): Promise<TResult> {
    const previous = this.#chains.get(sessionId) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => {},
      () => {},
    );
    this.#chains.set(sessionId, settled);
    settled.then(() => {
      if (this.#chains.get(sessionId) === settled) this.#chains.delete(sessionId);
    });
    return next;
  }
}
