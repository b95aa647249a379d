import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { purgeSessions } from '../../../store/retention/purge-sessions.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { storeFacts } from '../store-facts.ts';

const endedBefore = new Date('2026-02-01T00:00:00.000Z');

/**
 * A session whose last fact is a `run.ended` (of its first run) while its second run is still
 * open: only the open run's absence from the log may let retention take it.
 */
async function twoRuns(store: ReturnType<ReturnType<typeof testSchema>['open']>, id: string) {
  const facts = storeFacts(id);
  await store.append(id, [
    facts.runStarted(`${id}_1`, `${id}_run_1`),
    facts.runStarted(`${id}_2`, `${id}_run_2`),
    facts.runEnded(`${id}_3`, `${id}_run_1`),
  ]);
}

// Retention decides by the log, as openRuns() does: a runs index that lost a row, or marks an
// unfinished run ended, never gets a session with an open run purged.
describe('postgresStore retention: a wrong runs index, a subscription across a purge', () => {
  let database: ReturnType<typeof testSchema>;
  let admin: pg.Pool;

  beforeEach(() => {
    database = testSchema('defects_retention');
    admin = database.pool();
  });

  afterEach(async () => {
    await admin.end();
    await database.drop();
  });

  it('never finds nor removes a session whose facts hold an unfinished run, whatever the index says', async () => {
    const store = database.open();
    await twoRuns(store, 'hidden');
    await twoRuns(store, 'marked');
    await twoRuns(store, 'agreed');
    const ended = storeFacts('ended');
    await store.append('ended', [ended.runStarted('ended_1', 'r'), ended.runEnded('ended_2', 'r')]);
    const runs = `"${database.schema}".runs`;
    await admin.query(
      `DELETE FROM ${runs} WHERE session_id = 'hidden' AND run_id = 'hidden_run_2'`,
    );
    await admin.query(`UPDATE ${runs} SET ended_seq = 3 WHERE session_id = 'marked'`);

    const purger = database.open();
    expect(await purger.endedSessions({ endedBefore })).toEqual([
      { sessionId: 'ended', lastSeq: 2, endedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    // The disagreements are reported, as openRuns() reports them.
    expect((await purger.findings()).map(({ sessionId, kind }) => ({ sessionId, kind }))).toEqual([
      { sessionId: 'hidden', kind: 'unreadable' },
      { sessionId: 'marked', kind: 'unreadable' },
    ]);
    // Asked directly (a purge that found them before the index went wrong), it keeps them.
    expect(
      await purger.removeSessions([
        { sessionId: 'agreed', lastSeq: 3 },
        { sessionId: 'hidden', lastSeq: 3 },
        { sessionId: 'marked', lastSeq: 3 },
      ]),
    ).toEqual([
      { sessionId: 'agreed', outcome: 'changed' },
      { sessionId: 'hidden', outcome: 'unreadable' },
      { sessionId: 'marked', outcome: 'unreadable' },
    ]);
    expect(await purgeSessions(purger, { endedBefore })).toEqual({
      found: 1,
      removed: 1,
      archived: [],
      left: [],
      stopped: false,
    });
    expect(await purger.sessions()).toEqual(['agreed', 'hidden', 'marked']);
    for (const id of ['agreed', 'hidden', 'marked']) {
      expect(await purger.read(id)).toHaveLength(3);
    }
  });

  it('keeps a subscription across a purge by another store: the session started again is delivered from seq 1', async () => {
    const subscriber = database.open();
    const seen: string[] = [];
    const waiting: { count: number; resolve: () => void }[] = [];
    subscriber.subscribe('reused', (fact) => {
      seen.push(`${fact.id}@${fact.seq}`);
      for (const wait of waiting) if (seen.length >= wait.count) wait.resolve();
    });
    // Resolves once `count` facts arrived (no clock: the test's own timeout bounds it).
    const reached = (count: number) =>
      new Promise<void>((resolve) => {
        if (seen.length >= count) resolve();
        else waiting.push({ count, resolve });
      });
    await subscriber.read('reused'); // the subscription is in place
    const other = database.open();
    const facts = storeFacts('reused');
    await other.append('reused', [
      facts.runStarted('old_1', 'run_old'),
      facts.steering('old_2', 'run_old'),
      facts.runEnded('old_3', 'run_old'),
    ]);
    await reached(3);
    expect(seen).toEqual(['old_1@1', 'old_2@2', 'old_3@3']);
    expect(await purgeSessions(other, { endedBefore })).toMatchObject({ removed: 1 });
    // Started again, at once past the seq the subscription delivered last.
    await other.append('reused', [
      facts.runStarted('new_1', 'run_new'),
      facts.steering('new_2', 'run_new'),
      facts.steering('new_3', 'run_new'),
      facts.steering('new_4', 'run_new'),
    ]);
    const expected = ['old_1@1', 'old_2@2', 'old_3@3', 'new_1@1', 'new_2@2', 'new_3@3', 'new_4@4'];
    await reached(7);
    expect(seen).toEqual(expected);
    // A purge with nothing started again, then a start: seq 1 is delivered too.
    await other.append('reused', [facts.runEnded('new_5', 'run_new')]);
    await reached(8);
    expect(await purgeSessions(other, { endedBefore })).toMatchObject({ removed: 1 });
    await other.append('reused', [facts.runStarted('third_1', 'run_third')]);
    await reached(9);
    expect(seen.slice(7)).toEqual(['new_5@5', 'third_1@1']);
  });
});
