import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { StoreError } from '../event-store.ts';
import { isTempFileName } from './durable-file-adapter.ts';
import { tombstonePrefix } from './folder-retention.ts';
import { errorCode } from './store-fs.ts';
import { acquireStoreLock, type StoreLock } from './store-lock.ts';

/**
 * Creates the store's folders (fsyncing the folder that got new entries), takes the lock and
 * removes what a killed process left. A folder the process cannot use is a `StoreError` naming it.
 */
export function openStoreFolder(dir: string, sessionsDir: string, partialsDir: string): StoreLock {
  const folders = [sessionsDir, partialsDir];
  const where = (target: string, error: unknown) =>
    new StoreError({
      message: `lowdbStore: cannot use ${target} (${error instanceof Error ? error.message : String(error)}); the store needs a folder this process may create, read and write: choose another dir or fix its permissions`,
      path: target,
      code: errorCode(error),
      cause: error,
    });
  let created: string | undefined;
  try {
    created = mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw where(dir, error);
  }
  let lock: StoreLock;
  try {
    lock = acquireStoreLock(dir);
  } catch (error) {
    throw errorCode(error) === undefined ? error : where(dir, error);
  }
  let current = dir;
  try {
    for (const folder of folders) {
      current = folder;
      if (mkdirSync(folder, { recursive: true }) !== undefined) created ??= folder;
    }
    current = dir;
    if (created !== undefined) syncFolderNow(dir);
    current = sessionsDir;
    removeLeftovers(sessionsDir, partialsDir);
  } catch (error) {
    lock.release();
    throw where(current, error);
  }
  return lock;
}

function syncFolderNow(folder: string): void {
  const descriptor = openSync(folder, 'r');
  try {
    fsyncSync(descriptor);
  } catch (error) {
    if (process.platform !== 'win32') throw error;
  } finally {
    closeSync(descriptor);
  }
}

/**
 * Removes what a killed process left: staging folders of new or imported sessions, folders of
 * removed sessions not yet deleted (`.purge-`: already out of the store), partial temp files.
 */
function removeLeftovers(sessionsDir: string, partialsDir: string): void {
  for (const name of readdirSync(sessionsDir)) {
    if (name.startsWith('.new-') || name.startsWith(tombstonePrefix))
      rmSync(path.join(sessionsDir, name), { recursive: true, force: true });
  }
  for (const name of readdirSync(partialsDir)) {
    if (isTempFileName(name)) rmSync(path.join(partialsDir, name), { force: true });
  }
}
