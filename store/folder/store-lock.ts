import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { StoreLockedError } from '../event-store.ts';
import { errorCode } from './store-fs.ts';

/** The lock of a store directory, held by this process until `release()`. */
export interface StoreLock {
  readonly file: string;
  /** Removes the lock file, if it is still this process's. */
  release(): void;
}

/** The lock file's name inside a store directory. */
export const lockFileName = 'turnlog.lock';

let staleCounter = 0;

/**
 * Takes the single-process lock of a store directory: a lock file created exclusively (`wx`)
 * holding this process's pid. A live holder (another process, or another store in this one)
 * makes it throw `StoreLockedError` naming the pid; a holder that no longer exists (killed,
 * crashed) has its lock taken over, so a SIGKILL never locks the store out for good.
 *
 * @example
 * const lock = acquireStoreLock('.turnlog'); // throws StoreLockedError if a live process has it
 * lock.release();
 */
export function acquireStoreLock(dir: string): StoreLock {
  const file = path.join(dir, lockFileName);
  // A few rounds cover racing another process through a takeover; each round makes progress.
  for (let round = 0; round < 5; round += 1) {
    if (tryCreate(file)) return { file, release: () => release(file) };
    const holder = readHolder(file);
    if (holder === 'gone') continue;
    if (holder === undefined) {
      throw new StoreLockedError({
        message: `lowdbStore: ${file} exists but holds no pid (a process may be creating it right now); if no process uses ${dir}, delete ${file} and open the store again`,
        dir,
        pid: undefined,
      });
    }
    if (isAlive(holder, readStarted(file))) {
      const who = holder === process.pid ? 'another store in this process' : `process ${holder}`;
      throw new StoreLockedError({
        message: `lowdbStore: ${dir} is in use by ${who} (lock file ${file}); close that store or stop process ${holder} first — if no turnlog process has pid ${holder}, delete ${file}`,
        dir,
        pid: holder,
      });
    }
    takeOver(file, holder);
  }
  throw new StoreLockedError({
    message: `lowdbStore: could not take ${file}: other processes keep taking it over; open the store from one process at a time`,
    dir,
    pid: undefined,
  });
}

function tryCreate(file: string): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(file, 'wx');
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  }
  try {
    const started = startTicks(process.pid);
    writeSync(descriptor, `${process.pid}\n${started === undefined ? '' : `${started}\n`}`);
  } finally {
    closeSync(descriptor);
  }
  return true;
}

/** The holder's pid, `'gone'` when the lock vanished meanwhile, `undefined` when unreadable. */
function readHolder(file: string): number | 'gone' | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 'gone';
    throw error;
  }
  const pid = Number(text.split('\n')[0]?.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** The holder's start time as its lock file recorded it (second line), if it did. */
function readStarted(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').split('\n')[1]?.trim() || undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number, started: string | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    if (errorCode(error) === 'ESRCH') return false;
  }
  // The pid was reused when the process now holding it started at another time: after a
  // restart, a container's process often gets the pid (1) of the one that was killed.
  const now = started === undefined ? undefined : startTicks(pid);
  return now === undefined || now === started;
}

/**
 * When the process `pid` started, in clock ticks since boot, where the OS tells it (Linux's
 * /proc); `undefined` elsewhere. It tells a pid's processes apart, threads of one process alike.
 */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command name (field 2) may hold spaces, so count from the ')' closing it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Moves a dead holder's lock aside. The rename is atomic, so of two processes taking over only
 * one moves it; if what moved is not the dead holder's (someone took over first), it goes back.
 */
function takeOver(file: string, deadPid: number): void {
  staleCounter += 1;
  const aside = `${file}.stale-${process.pid}-${staleCounter}`;
  try {
    renameSync(file, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (readHolder(aside) !== deadPid) {
    try {
      linkSync(aside, file);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }
  unlinkSync(aside);
}

function release(file: string): void {
  if (readHolder(file) === process.pid) unlinkSync(file);
}
