import path from 'node:path';
import type { Adapter } from 'lowdb';
import { StoreCorruptionError } from '../event-store.ts';
import { errorCode, nodeStoreFs, type StoreFs, syncFolder } from './store-fs.ts';

const utf8 = new TextDecoder();

/** Options of `DurableFileAdapter`. */
export interface DurableFileAdapterOptions {
  /**
   * Whether `write` waits for the disk (fsync of the file, then of its folder). Default `true`;
   * `false` still never leaves a torn file after a process kill, but may lose the write on
   * power loss.
   */
  fsync?: boolean;
  /** The file system (default: Node's). */
  fs?: StoreFs;
}

/** Temp names are unique per process without a clock or randomness: pid plus a counter. */
let tempCounter = 0;

/**
 * A lowdb adapter for one JSON file that is never left torn. `write` goes temp file → fsync →
 * rename over the file → fsync of the folder, so after a crash the file holds the old document or
 * the new one, never a mix. `read` returns `null` for a missing file and throws
 * `StoreCorruptionError` naming the file for one that does not parse — never an empty document.
 * `lowdbStore` keeps each session's record (`session.json`) and reads 0.1.0 segments with it.
 *
 * @example
 * const record = new Low<SessionRecord | null>(new DurableFileAdapter(file), null);
 * await record.read(); // record.data: the document, or null when the file does not exist
 */
export class DurableFileAdapter<TData> implements Adapter<TData> {
  readonly file: string;
  readonly #fsync: boolean;
  readonly #fs: StoreFs;

  constructor(file: string, options: DurableFileAdapterOptions = {}) {
    this.file = file;
    this.#fsync = options.fsync ?? true;
    this.#fs = options.fs ?? nodeStoreFs;
  }

  async read(): Promise<TData | null> {
    let text: string;
    try {
      text = utf8.decode(await this.#fs.readFile(this.file));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
    try {
      return JSON.parse(text) as TData;
    } catch (error) {
      const reason = text.length === 0 ? 'it is empty' : (error as Error).message;
      throw new StoreCorruptionError({
        message: `lowdbStore: ${this.file} is not valid JSON (${reason}); restore it from a backup or move it away`,
        file: this.file,
        cause: error,
      });
    }
  }

  async write(data: TData): Promise<void> {
    // Serialize first: later changes to `data` do not reach this write.
    const bytes = Buffer.from(JSON.stringify(data), 'utf8');
    const folder = path.dirname(this.file);
    tempCounter += 1;
    const temp = path.join(
      folder,
      `.${path.basename(this.file)}.tmp-${process.pid}-${tempCounter}`,
    );
    try {
      const handle = await this.#fs.open(temp, 'w');
      try {
        await handle.write(bytes);
        if (this.#fsync) await handle.sync();
      } finally {
        await handle.close();
      }
      await this.#fs.rename(temp, this.file);
    } catch (error) {
      await this.#fs.unlink(temp).catch(() => {});
      throw error;
    }
    // The rename is durable only once the folder entry is on disk.
    if (this.#fsync) await syncFolder(this.#fs, folder);
  }
}

/** True for a leftover temp file of `DurableFileAdapter` (safe to delete while holding the lock). */
export function isTempFileName(name: string): boolean {
  return /^\..+\.tmp-\d+-\d+$/.test(name);
}
