import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { nodeStoreFs, type StoreFileHandle, type StoreFs } from '../../../store/folder/store-fs.ts';

/**
 * One file-system operation as the disk sees it, on inodes (numbers) rather than paths, so a
 * replay is exact across renames. `link` creates a name for a new file or folder; `sync` is an
 * fsync or fdatasync of a file, or an fsync of a folder.
 */
export type DiskOp =
  | { op: 'link'; dir: number; name: string; node: number; kind: 'file' | 'dir' }
  | { op: 'rename'; dir: number; from: string; to: string; node: number }
  | { op: 'unlink'; dir: number; name: string; node: number }
  | { op: 'write'; node: number; offset: number; data: Buffer }
  | { op: 'truncate'; node: number; length: number }
  | { op: 'sync'; node: number }
  /** An fsync that failed (EIO): what it was to make durable is resolved now, the rest lost. */
  | { op: 'sync-failed'; node: number };

/** The tree a recording starts from: everything in it is durable. */
export interface DiskImage {
  /** Inode 0 is the root folder. */
  nodes: Map<
    number,
    { kind: 'file'; content: Buffer } | { kind: 'dir'; entries: Map<string, number> }
  >;
}

interface LiveNode {
  kind: 'file' | 'dir';
  size: number;
  entries: Map<string, number>;
}

/** Which syncs fail: called before each, with its number (1, 2, …) and the file or folder. */
export type FailSync = (sync: { count: number; file: string }) => boolean;

/**
 * A `StoreFs` over Node's that records every write, sync, create, rename, truncate and removal
 * under `root` as `DiskOp`s, with the real effect applied as it goes. `image` is the tree found
 * under `root` when the recording started; `ops` grows with each operation, so `ops.length` taken
 * when an append resolves is the point after which it was acknowledged. A sync `failSync` picks
 * rejects with EIO (recorded as `sync-failed`) while the written bytes stay readable, as the
 * page cache keeps them on Linux after a failed writeback; as on Linux since 4.13, every other
 * handle open on that file or folder then reports the failure on its next sync, once.
 */
export function recordingFs(root: string, options: { failSync?: FailSync } = {}) {
  let syncs = 0;
  /** Per node, the failed syncs so far (Linux's errseq_t): each open handle reports each once. */
  const failures = new Map<number, number>();
  const eio = (file: string) =>
    Object.assign(new Error(`EIO: i/o error, fsync '${file}'`), {
      code: 'EIO',
      errno: -5,
      syscall: 'fsync',
      path: file,
    });
  /** Syncs `node` through one handle (`seen`: the failures it reported), or fails it. */
  const syncOf = async (
    node: number,
    file: string,
    seen: { failures: number },
    sync: () => Promise<void>,
  ) => {
    syncs += 1;
    if (options.failSync?.({ count: syncs, file }) === true) {
      failures.set(node, (failures.get(node) ?? 0) + 1);
      seen.failures = failures.get(node) ?? 0;
      ops.push({ op: 'sync-failed', node });
      throw eio(file);
    }
    await sync();
    ops.push({ op: 'sync', node });
    // A handle open when another one's sync failed reports that failure too, once.
    const failed = failures.get(node) ?? 0;
    if (failed > seen.failures) {
      seen.failures = failed;
      throw eio(file);
    }
  };
  const live = new Map<number, LiveNode>();
  const image: DiskImage = { nodes: new Map() };
  let nextNode = 0;
  const snapshot = (folder: string): number => {
    const id = nextNode++;
    const entries = new Map<string, number>();
    live.set(id, { kind: 'dir', size: 0, entries });
    const imaged = new Map<string, number>();
    image.nodes.set(id, { kind: 'dir', entries: imaged });
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) {
        const child = snapshot(full);
        entries.set(entry.name, child);
        imaged.set(entry.name, child);
      } else {
        const child = nextNode++;
        const content = readFileSync(full);
        live.set(child, { kind: 'file', size: content.length, entries: new Map() });
        image.nodes.set(child, { kind: 'file', content });
        entries.set(entry.name, child);
        imaged.set(entry.name, child);
      }
    }
    return id;
  };
  snapshot(root);
  const ops: DiskOp[] = [];

  /** The folder node and the name of a path under root (`undefined` for paths outside it). */
  const locate = (file: string): { dir: number; name: string } | undefined => {
    const relative = path.relative(root, file);
    if (relative === '' || relative.startsWith('..')) return undefined;
    const parts = relative.split(path.sep);
    const name = parts.pop() as string;
    let dir = 0;
    for (const part of parts) {
      const next = live.get(dir)?.entries.get(part);
      if (next === undefined) throw new Error(`recordingFs: ${file}: ${part} is not known`);
      dir = next;
    }
    return { dir, name };
  };
  const nodeAt = (file: string): number | undefined => {
    if (path.resolve(file) === path.resolve(root)) return 0;
    const where = locate(file);
    return where === undefined ? undefined : live.get(where.dir)?.entries.get(where.name);
  };
  const link = (file: string, kind: 'file' | 'dir'): number => {
    const where = locate(file);
    if (where === undefined) throw new Error(`recordingFs: ${file} is outside ${root}`);
    const node = nextNode++;
    live.set(node, { kind, size: 0, entries: new Map() });
    live.get(where.dir)?.entries.set(where.name, node);
    ops.push({ op: 'link', ...where, node, kind });
    return node;
  };

  const unlinked = (file: string) => {
    const where = locate(file);
    const node = where === undefined ? undefined : live.get(where.dir)?.entries.get(where.name);
    if (where === undefined || node === undefined) return;
    live.get(where.dir)?.entries.delete(where.name);
    ops.push({ op: 'unlink', ...where, node });
  };

  const fs: StoreFs = {
    readFile: (file) => nodeStoreFs.readFile(file),
    readdir: (folder) => nodeStoreFs.readdir(folder),
    async mkdir(folder) {
      await nodeStoreFs.mkdir(folder);
      link(folder, 'dir');
    },
    async rename(from, to) {
      const source = locate(from);
      const target = locate(to);
      if (source === undefined || target === undefined || source.dir !== target.dir) {
        throw new Error(`recordingFs: renames stay inside one folder (${from} → ${to})`);
      }
      await nodeStoreFs.rename(from, to);
      const entries = live.get(source.dir)?.entries;
      const node = entries?.get(source.name);
      if (node === undefined) throw new Error(`recordingFs: ${from} is not known`);
      entries?.delete(source.name);
      entries?.set(target.name, node);
      ops.push({ op: 'rename', dir: source.dir, from: source.name, to: target.name, node });
    },
    async unlink(file) {
      await nodeStoreFs.unlink(file);
      unlinked(file);
    },
    async removeFolder(folder) {
      await nodeStoreFs.removeFolder(folder);
      unlinked(folder);
    },
    async open(file, flags) {
      const existing = nodeAt(file);
      const handle = await nodeStoreFs.open(file, flags);
      let node = existing;
      if (node === undefined && flags !== 'r') node = link(file, 'file');
      if (node === undefined) return handle; // outside root
      const state = live.get(node) as LiveNode;
      if (flags === 'w' && existing !== undefined) {
        state.size = 0;
        ops.push({ op: 'truncate', node, length: 0 });
      }
      let position = flags === 'a' ? state.size : 0;
      const seen = { failures: failures.get(node) ?? 0 };
      const recorded: StoreFileHandle = {
        write: async (data) => {
          await handle.write(data);
          ops.push({ op: 'write', node, offset: position, data: Buffer.from(data) });
          position += data.length;
          state.size = Math.max(state.size, position);
        },
        datasync: () => syncOf(node, file, seen, () => handle.datasync()),
        sync: () => syncOf(node, file, seen, () => handle.sync()),
        truncate: async (length) => {
          await handle.truncate(length);
          state.size = length;
          ops.push({ op: 'truncate', node, length });
        },
        close: () => handle.close(),
      };
      return recorded;
    },
  };
  return { fs, ops, image };
}
