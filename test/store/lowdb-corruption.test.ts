import { readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { StoreCorruptionError } from '../../store/event-store.ts';
import type { SegmentDocument } from '../../store/session-files.ts';
import { lowdbFixture } from './lowdb-fixture.ts';
import { storeFacts } from './store-facts.ts';

const fixture = lowdbFixture();
const { open, segment, appendSteps } = fixture;
const b = storeFacts('session_b');

describe('lowdbStore corruption', () => {
  beforeEach(async () => {
    const store = open({ segmentSize: 4 });
    await appendSteps(store, 'session_a', 10);
    await appendSteps(store, 'session_b', 3);
    await store.close();
  });

  async function expectCorrupt(file: string, message: RegExp) {
    const store = open({ segmentSize: 4 });
    const error = await store.read('session_a').catch((caught: unknown) => caught);
    expect(StoreCorruptionError.isInstance(error)).toBe(true);
    expect((error as StoreCorruptionError).file).toBe(file);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(message);
    // Asking again gives the same error, never an empty or shortened session.
    await expect(store.read('session_a')).rejects.toMatchObject({
      name: 'StoreCorruptionError',
      file,
    });
    expect((await store.read('session_b')).map((fact) => fact.seq)).toEqual([1, 2, 3]);
    await store.append('session_b', [b.steering('g4', 'run_1')]);
    expect((await store.read('session_b')).length).toBe(4);
  }

  it('names a truncated segment and keeps the other sessions readable', async () => {
    const file = segment('session_a', 1);
    truncateSync(file, Math.floor(readFileSync(file).length / 2));
    await expectCorrupt(file, /is not valid JSON \(.+\); restore it from a backup or move it away/);
  });

  it('names an empty segment', async () => {
    const file = segment('session_a', 2);
    writeFileSync(file, '');
    await expectCorrupt(file, /is not valid JSON \(it is empty\)/);
  });

  it('names a hand-edited segment with a seq gap inside it', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    document.facts.splice(1, 1);
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(
      file,
      /seq 7 .* is where seq 6 belongs: the log has a gap or is out of order/,
    );
  });

  it('names a segment that does not continue the one before', async () => {
    const file = segment('session_a', 2);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    for (const fact of document.facts) fact.seq += 1;
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(file, /seq 10 .* is where seq 9 belongs/);
  });

  it('names a stored fact that lacks a field: its seq, type and field', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    delete (document.facts[1] as { text?: string }).text;
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(
      file,
      /the entry for seq 6 \(fact session_a_6\) is not a valid fact: steering\.received field text is missing \(expected string\)/,
    );
  });

  it('names a fact after its run ended (I7) instead of loading the session silently', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    const {
      text: _text,
      messageId: _messageId,
      ...envelope
    } = document.facts[1] as Fact & {
      text: string;
      messageId: string;
    };
    document.facts[1] = { ...envelope, type: 'run.ended', status: 'completed', reason: 'end_turn' };
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(
      file,
      /seq 7 \(steering\.received, fact session_a_7\) comes after the run\.ended of run run_1; a run ends once and nothing follows \(I7\)/,
    );
  });

  it('names a repeated fact id', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    (document.facts[2] as Fact).id = 'session_a_2';
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(
      file,
      /seq 7 \(steering\.received, fact session_a_2\) repeats a fact id already used earlier/,
    );
  });

  it('names a missing segment between others', async () => {
    const file = segment('session_a', 1);
    unlinkSync(file);
    await expectCorrupt(file, /is missing but later segments .* exist; restore it from a backup/);
  });

  it('names a segment whose facts belong to another session', async () => {
    const file = segment('session_a', 0);
    writeFileSync(file, readFileSync(segment('session_b', 0)));
    await expectCorrupt(file, /belongs to session session_b, not session_a/);
  });

  it('names a segment whose open-runs summary disagrees with its facts', async () => {
    const file = segment('session_a', 1);
    const document = JSON.parse(readFileSync(file, 'utf8')) as SegmentDocument;
    document.openRuns = [];
    writeFileSync(file, JSON.stringify(document));
    await expectCorrupt(file, /its openRuns summary does not match the facts of the session/);
  });

  it('fails openRuns with the error naming a corrupt tail rather than hiding its runs', async () => {
    const file = segment('session_a', 2);
    writeFileSync(file, '{"format":');
    const store = open();
    await expect(store.openRuns()).rejects.toMatchObject({ name: 'StoreCorruptionError', file });
  });
});
