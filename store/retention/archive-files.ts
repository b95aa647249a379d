import { open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { sessionFolderName } from '../folder/session-files.ts';
import { nodeStoreFs, syncFolder } from '../folder/store-fs.ts';

let tempCounter = 0;

/**
 * The file of a session's archive: its folder name in lowdbStore (`a-z0-9_-` kept, other bytes
 * `~XX`, long ids hashed) plus `.jsonl`, so every id makes one safe file name.
 */
export function archiveFileName(sessionId: string): string {
  return `${sessionFolderName(sessionId)}.jsonl`;
}

/**
 * Writes a session archive durably and atomically: a temp file, fsynced, renamed over the
 * archive's name, then the folder fsynced (with `syncFolder: false` the caller does that, once
 * for many: `syncArchiveFolder`). Returns the archive's path. A crash leaves the old file or the
 * new one (and perhaps a `.tmp-` file, which `archiveFiles` never lists).
 */
export async function writeArchiveFile(
  dir: string,
  sessionId: string,
  text: string,
  options: { syncFolder?: boolean } = {},
): Promise<string> {
  const file = path.join(dir, archiveFileName(sessionId));
  tempCounter += 1;
  const temp = path.join(dir, `.tmp-${process.pid}-${tempCounter}-${archiveFileName(sessionId)}`);
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  if (options.syncFolder !== false) await syncArchiveFolder(dir);
  return file;
}

/** fsyncs an archive folder: the archives renamed into it survive a power cut. */
export function syncArchiveFolder(dir: string): Promise<void> {
  return syncFolder(nodeStoreFs, dir);
}

/** Removes a session archive written for a session that was then left in the store. */
export async function removeArchiveFile(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** The archive files of a folder (`*.jsonl`, temp files left out), sorted by name. */
export async function archiveFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir);
  return names
    .filter((name) => name.endsWith('.jsonl') && !name.startsWith('.'))
    .sort()
    .map((name) => path.join(dir, name));
}
