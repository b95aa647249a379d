import path from 'node:path';
import { Low } from 'lowdb';
import type { OpenRun } from '../event-store.ts';
import type { SessionLog } from '../session-log.ts';
import { trackOpenRun } from '../session-log.ts';
import { summary } from './load-session.ts';
import { SegmentFileAdapter, type SegmentHeader, segmentFormat } from './segment-file-adapter.ts';
import { segmentFileName } from './session-files.ts';
import { recordOf, type SegmentEntry, writeSessionRecord } from './session-record.ts';
import { errorCode, type StoreFs, syncFolder } from './store-fs.ts';

let counter = 0;

/** The prefix of a removed session's folder until it is deleted (`openStoreFolder` deletes leftovers). */
export const tombstonePrefix = '.purge-';

/**
 * Writes a whole session as a new folder — every segment of `segmentSize` facts with its header,
 * then the record, each fsynced — in a staging folder that is renamed into place last, so a crash
 * leaves the session whole or absent (a leftover `.new-` folder is deleted at open). `'exists'`
 * when the session's folder is there already: nothing of it was changed.
 */
export async function writeWholeSession(options: {
  fs: StoreFs;
  sessionsDir: string;
  folder: string;
  log: SessionLog;
  segmentSize: number;
}): Promise<'imported' | 'exists'> {
  const { fs, sessionsDir, folder, log, segmentSize } = options;
  counter += 1;
  const staging = path.join(sessionsDir, `.new-${process.pid}-import-${counter}`);
  await fs.mkdir(staging);
  try {
    const segments: SegmentEntry[] = [];
    const open = new Map<string, OpenRun>();
    for (let firstSeq = 1; firstSeq <= log.lastSeq; firstSeq += segmentSize) {
      const facts = log.slice(firstSeq, Math.min(log.lastSeq, firstSeq + segmentSize - 1));
      const index = segments.length;
      const openRuns = summary(open);
      const header: SegmentHeader = {
        format: segmentFormat,
        sessionId: log.sessionId,
        segment: index,
        firstSeq,
        openRuns,
      };
      const file = path.join(staging, segmentFileName(index, 'jsonl'));
      await new Low(new SegmentFileAdapter(file, { fs }), { header, facts: [...facts] }).write();
      segments.push({ index, format: 'jsonl', firstSeq, count: facts.length, openRuns });
      for (const fact of facts) trackOpenRun(open, fact);
    }
    // The record's write fsyncs the staging folder: every segment's entry is durable with it.
    await writeSessionRecord(fs, staging, recordOf(log.sessionId, segments, log));
    await fs.rename(staging, folder);
  } catch (error) {
    await fs.removeFolder(staging).catch(() => {});
    // A folder in the way (a rename onto a folder that is not empty): the session exists.
    if (errorCode(error) === 'ENOTEMPTY' || errorCode(error) === 'EEXIST') return 'exists';
    throw error;
  }
  await syncFolder(fs, sessionsDir);
  return 'imported';
}

/**
 * Takes a session's folder out of the store in one atomic step — a rename to a `.purge-` name,
 * which no listing takes for a session — and returns where it went; the caller fsyncs the
 * sessions folder (once for many) and then deletes it (`openStoreFolder` deletes what a crash
 * left).
 */
export async function retireSessionFolder(
  fs: StoreFs,
  sessionsDir: string,
  folder: string,
): Promise<string> {
  counter += 1;
  const tombstone = path.join(sessionsDir, `${tombstonePrefix}${process.pid}-${counter}`);
  await fs.rename(folder, tombstone);
  return tombstone;
}

/** True while `folder` exists (a read that failed because a purge took it away is no damage). */
export async function folderExists(fs: StoreFs, folder: string): Promise<boolean> {
  try {
    await fs.readdir(folder);
    return true;
  } catch (error) {
    return errorCode(error) !== 'ENOENT';
  }
}
