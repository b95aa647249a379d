import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';

/** An open file (or folder, for `sync`) of a `StoreFs`. */
export interface StoreFileHandle {
  /** Writes all of `data` at the handle's position (the end of the file, for `'a'`). */
  write(data: Uint8Array): Promise<void>;
  /** Makes the file's data (and the size needed to read it) durable: `fdatasync`. */
  datasync(): Promise<void>;
  /** Makes the file durable, or, on a folder, the entries created, renamed or removed in it. */
  sync(): Promise<void>;
  /** Cuts the file to `length` bytes. */
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Every file-system operation `lowdbStore` makes after it opened its folder: reading and writing
 * segments and session records, syncing, renaming, cutting a torn tail. The default is Node's
 * `fs`; pass your own to observe the store's writes (or to make them fail, in tests). Opening
 * the folder and the lock use Node's `fs` directly.
 */
export interface StoreFs {
  /** The whole file (a Node `Buffer` is a `Uint8Array`; the declaration needs no Node types). */
  readFile(file: string): Promise<Uint8Array>;
  /** Entry names of a folder (not sorted). */
  readdir(folder: string): Promise<string[]>;
  /** Creates one folder (its parent exists). */
  mkdir(folder: string): Promise<void>;
  /**
   * `'r'`: read (a folder too, for `sync`); `'a'`: append to an existing file; `'wx'`: create a
   * new file, failing if it exists; `'w'`: create or empty a file; `'r+'`: change an existing file.
   */
  open(file: string, flags: 'r' | 'a' | 'wx' | 'w' | 'r+'): Promise<StoreFileHandle>;
  /** Renames within one folder (atomic: the old entry or the new one). */
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
  /** Removes a folder and what it holds (a staging folder after a failed write). */
  removeFolder(folder: string): Promise<void>;
}

/** The default `StoreFs`: Node's `fs/promises`. */
export const nodeStoreFs: StoreFs = {
  // Node leaves the path out of some errors (EISDIR from a read): the store's messages name it.
  readFile: (file) =>
    readFile(file).catch((error: unknown) => {
      if (error instanceof Error && !('path' in error)) Object.assign(error, { path: file });
      throw error;
    }),
  readdir: (folder) => readdir(folder),
  mkdir: async (folder) => {
    await mkdir(folder);
  },
  async open(file, flags) {
    const handle = await open(file, flags);
    return {
      write: async (data) => {
        // A write may take fewer bytes than asked (rare for files, allowed by POSIX): go on.
        for (let offset = 0; offset < data.length; ) {
          const { bytesWritten } = await handle.write(data, offset);
          offset += bytesWritten;
        }
      },
      datasync: () => handle.datasync(),
      sync: () => handle.sync(),
      truncate: (length) => handle.truncate(length),
      close: () => handle.close(),
    };
  },
  rename: (from, to) => rename(from, to),
  unlink: (file) => unlink(file),
  removeFolder: (folder) => rm(folder, { recursive: true, force: true }),
};

/** fsyncs a folder, so entries created, renamed or removed in it survive power loss. */
export async function syncFolder(fs: StoreFs, folder: string): Promise<void> {
  const handle = await fs.open(folder, 'r');
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
