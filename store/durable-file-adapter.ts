import { open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Adapter } from 'lowdb';
import { StoreCorruptionError } from './event-store.ts';

/** Options of `DurableFileAdapter`. */
export interface DurableFileAdapterOptions {
  /**
   * Whether `write` waits for the disk (fsync of the file, then of its folder). Default `true`;
   * `false` still never leaves a torn file after a process kill, but may lose the write on
   * power loss.
   */
  fsync?: boolean;
}

/** Temp names are unique per process without a clock or randomness: pid plus a counter. */
let tempCounter = 0;

/**
 * A lowdb adapter for one JSON file that is never left torn. `write` goes temp file → fsync →
 * rename over the file → fsync of the folder, so after a crash the file holds the old document or
 * the new one, never a mix. `read` returns `null` for a missing file and throws
 * `StoreCorruptionError` naming the file for one that does not parse — never an empty document.
 *
 * @example
 * const segment = new Low(new DurableFileAdapter<SegmentDocument>(file), undefined);
 * await segment.read();
 */
export class DurableFileAdapter<TData> implements Adapter<TData> {
  readonly file: string;
  readonly #fsync: boolean;

  constructor(file: string, options: DurableFileAdapterOptions = {}) {
    this.file = file;
    this.#fsync = options.fsync ?? true;
  }

  async read(): Promise<TData | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
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
    const text = JSON.stringify(data);
    const folder = path.dirname(this.file);
    tempCounter += 1;
    const temp = path.join(
      folder,
      `.${path.basename(this.file)}.tmp-${process.pid}-${tempCounter}`,
    );
    try {
      const handle = await open(temp, 'w');
      try {
        await handle.writeFile(text, 'utf8');
        if (this.#fsync) await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, this.file);
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    }
    // The rename is durable only once the folder entry is on disk.
    if (this.#fsync) await syncFolder(folder);
  }
}

/** True for a leftover temp file of `DurableFileAdapter` (safe to delete while holding the lock). */
export function isTempFileName(name: string): boolean {
  return /^\..+\.tmp-\d+-\d+$/.test(name);
}

/** fsyncs a folder, so entries created, renamed or removed in it survive power loss. */
export async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Windows cannot fsync a folder; its renames are as durable as it makes them.
    if (process.platform !== 'win32') throw error;
  } finally {
    await handle.close();
  }
}

/** The `code` of a Node system error (`ENOENT`, `EEXIST`, …), if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
