import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DiskImage, DiskOp } from './recording-fs.ts';

type FileChange = Extract<DiskOp, { op: 'write' | 'truncate' }>;
type EntryChange = Extract<DiskOp, { op: 'link' | 'rename' | 'unlink' }>;

interface DiskFile {
  kind: 'file';
  /** What a power cut cannot take back: the content at the last sync. */
  durable: Buffer;
  /** Changes since the last sync, in order. */
  pending: FileChange[];
}

interface DiskDir {
  kind: 'dir';
  /** The entries at the folder's last fsync. */
  durable: Map<string, number>;
  /** Entries created, renamed or removed since, in order. */
  pending: EntryChange[];
}

/**
 * How a power cut resolves what was not synced. A file keeps a prefix of its unsynced changes,
 * the first one left out possibly torn at a byte (appended data reaches the disk in order, as
 * on ext4, XFS and btrfs: a tear leaves a short last line, not a hole). A folder keeps any
 * subset of its unsynced creates, renames and removals, in any combination: POSIX promises
 * nothing about them before the folder's fsync.
 */
export interface PowerCutChoice {
  /** A number in [0, 1): the stream of choices, one draw per decision. */
  random: () => number;
}

/** The disk after `ops` ran from `image` and the power went out, resolved with `choice`. */
export function powerCut(image: DiskImage, ops: readonly DiskOp[], choice: PowerCutChoice) {
  const nodes = new Map<number, DiskFile | DiskDir>();
  for (const [id, node] of image.nodes) {
    nodes.set(
      id,
      node.kind === 'file'
        ? { kind: 'file', durable: node.content, pending: [] }
        : { kind: 'dir', durable: new Map(node.entries), pending: [] },
    );
  }
  for (const op of ops) {
    switch (op.op) {
      case 'link':
        nodes.set(
          op.node,
          op.kind === 'file'
            ? { kind: 'file', durable: Buffer.alloc(0), pending: [] }
            : { kind: 'dir', durable: new Map(), pending: [] },
        );
        dirOf(nodes, op.dir).pending.push(op);
        break;
      case 'rename':
      case 'unlink':
        dirOf(nodes, op.dir).pending.push(op);
        break;
      case 'write':
      case 'truncate':
        fileOf(nodes, op.node).pending.push(op);
        break;
      case 'sync': {
        // POSIX: an fsync makes that file's data, or that folder's entries, durable — nothing else.
        const node = nodes.get(op.node);
        if (node?.kind === 'file') {
          node.durable = applyFile(node.durable, node.pending);
          node.pending = [];
        } else if (node?.kind === 'dir') {
          applyEntries(node.durable, node.pending);
          node.pending = [];
        }
        break;
      }
      case 'sync-failed': {
        // Linux after a failed writeback of a file's data: some of it may have reached the disk,
        // the rest is dropped for good (a later fsync succeeds without writing it). A folder's
        // entries are journaled metadata: they stay pending, for the next commit or the cut.
        const node = nodes.get(op.node);
        if (node?.kind === 'file') {
          node.durable = cutFile(node, choice);
          node.pending = [];
        }
        break;
      }
      default:
        op satisfies never;
    }
  }
  // The cut: each file keeps some prefix of its unsynced changes, each folder some subset.
  const after = new Map<number, Buffer | Map<string, number>>();
  for (const [id, node] of nodes) {
    if (node.kind === 'dir') {
      const entries = new Map(node.durable);
      applyEntries(
        entries,
        node.pending.filter(() => choice.random() >= 0.5),
      );
      after.set(id, entries);
      continue;
    }
    after.set(id, cutFile(node, choice));
  }
  return {
    /** Writes the surviving tree under `dir` (which must not exist). */
    materialize(dir: string): void {
      const write = (id: number, target: string) => {
        const node = after.get(id);
        if (node instanceof Map) {
          mkdirSync(target);
          for (const [name, child] of node) write(child, path.join(target, name));
        } else if (node !== undefined) {
          writeFileSync(target, node);
        }
      };
      write(0, dir);
    },
  };
}

/** A file's content after a cut: its durable bytes and a prefix of its unsynced changes. */
function cutFile(node: DiskFile, choice: PowerCutChoice): Buffer {
  const kept = Math.floor(choice.random() * (node.pending.length + 1));
  let content = applyFile(node.durable, node.pending.slice(0, kept));
  const next = node.pending[kept];
  if (next?.op === 'write' && next.data.length > 1) {
    // Torn inside the write that was under way.
    const bytes = Math.floor(choice.random() * next.data.length);
    content = applyFile(content, [{ ...next, data: next.data.subarray(0, bytes) }]);
  }
  return content;
}

function dirOf(nodes: Map<number, DiskFile | DiskDir>, id: number): DiskDir {
  const node = nodes.get(id);
  if (node?.kind !== 'dir') throw new Error(`powerCut: node ${id} is not a folder`);
  return node;
}

function fileOf(nodes: Map<number, DiskFile | DiskDir>, id: number): DiskFile {
  const node = nodes.get(id);
  if (node?.kind !== 'file') throw new Error(`powerCut: node ${id} is not a file`);
  return node;
}

function applyFile(content: Buffer, changes: readonly FileChange[]): Buffer {
  let result = content;
  for (const change of changes) {
    if (change.op === 'truncate') {
      result = result.subarray(0, Math.min(change.length, result.length));
      if (change.length > result.length) {
        result = Buffer.concat([result, Buffer.alloc(change.length - result.length)]);
      }
      continue;
    }
    const end = change.offset + change.data.length;
    const next = Buffer.alloc(Math.max(result.length, end));
    result.copy(next);
    change.data.copy(next, change.offset);
    result = next;
  }
  return result;
}

function applyEntries(entries: Map<string, number>, changes: readonly EntryChange[]): void {
  const remove = (name: string, node: number) => {
    if (entries.get(name) === node) entries.delete(name);
  };
  for (const change of changes) {
    if (change.op === 'link') entries.set(change.name, change.node);
    else if (change.op === 'unlink') remove(change.name, change.node);
    else {
      // Kept without the create before it: the renamed inode appears under its new name.
      remove(change.from, change.node);
      entries.set(change.to, change.node);
    }
  }
}
