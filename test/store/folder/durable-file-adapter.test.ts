import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Low } from 'lowdb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoreCorruptionError } from '../../../store/event-store.ts';
import { DurableFileAdapter, isTempFileName } from '../../../store/folder/durable-file-adapter.ts';

describe('DurableFileAdapter', () => {
  let dir: string;
  let file: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-adapter-'));
    file = path.join(dir, 'doc.json');
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a missing file as null, so lowdb keeps its default', async () => {
    const low = new Low(new DurableFileAdapter<{ n: number }>(file), { n: 0 });
    await low.read();
    expect(low.data).toEqual({ n: 0 });
  });

  it('writes through lowdb and reads the same document back, leaving no temp file', async () => {
    const low = new Low(new DurableFileAdapter<{ n: number; text: string }>(file), {
      n: 1,
      text: 'é\n',
    });
    await low.write();
    low.data.n = 2;
    await low.write();
    const again = new Low(new DurableFileAdapter<{ n: number; text: string }>(file), {
      n: 0,
      text: '',
    });
    await again.read();
    expect(again.data).toEqual({ n: 2, text: 'é\n' });
    expect(readdirSync(dir)).toEqual(['doc.json']);
  });

  it('throws StoreCorruptionError naming a file that is not JSON, never an empty document', async () => {
    writeFileSync(file, '{"n": 1');
    const error = await new DurableFileAdapter(file).read().catch((caught: unknown) => caught);
    expect(StoreCorruptionError.isInstance(error)).toBe(true);
    expect((error as StoreCorruptionError).file).toBe(file);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^lowdbStore: ${file} is not valid JSON \\(.+\\); restore it from a backup or move it away$`,
      ),
    );
  });

  it('names an empty file as empty', async () => {
    writeFileSync(file, '');
    await expect(new DurableFileAdapter(file).read()).rejects.toThrow(
      /is not valid JSON \(it is empty\)/,
    );
  });

  it('fsyncs the complete temp file before the rename and the folder after it', async () => {
    writeFileSync(file, '{"n":1}');
    const probe = await open(file, 'r');
    const handleType = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const syncs: string[] = [];
    const sync = vi.spyOn(handleType, 'sync').mockImplementation(async function (this: FileHandle) {
      const stats = await this.stat();
      const what = stats.isDirectory() ? 'folder' : `file of ${stats.size} bytes`;
      syncs.push(`${what}, target holds ${readFileSync(file, 'utf8')}`);
    });
    try {
      await new DurableFileAdapter<{ n: number }>(file).write({ n: 22 });
      await new DurableFileAdapter<{ n: number }>(file, { fsync: false }).write({ n: 3 });
    } finally {
      sync.mockRestore();
    }
    expect(syncs).toEqual([
      'file of 8 bytes, target holds {"n":1}',
      'folder, target holds {"n":22}',
    ]);
    expect(readFileSync(file, 'utf8')).toBe('{"n":3}');
  });

  it('removes its temp file when a write fails', async () => {
    const adapter = new DurableFileAdapter(path.join(dir, 'doc.json', 'inside.json'));
    writeFileSync(file, '{}');
    await expect(adapter.write({ n: 1 })).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(readdirSync(dir)).toEqual(['doc.json']);
  });

  it('names its temp files so a store can recognise leftovers', () => {
    expect(isTempFileName('.000003.json.tmp-4242-17')).toBe(true);
    expect(isTempFileName('000003.json')).toBe(false);
    expect(isTempFileName('.new-4242-1')).toBe(false);
  });
});
