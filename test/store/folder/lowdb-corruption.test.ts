import { readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { StoreCorruptionError } from '../../../store/event-store.ts';
import { storeFacts } from '../store-facts.ts';
import { lowdbFixture } from './lowdb-fixture.ts';

const fixture = lowdbFixture();
const { open, segment, record, appendSteps } = fixture;
const b = storeFacts('session_b');

/** A file's lines without the last newline's empty string. */
const fileLines = (file: string) => readFileSync(file, 'utf8').split('\n').slice(0, -1);
const writeLines = (file: string, lines: string[]) =>
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));

describe('lowdbStore corruption', () => {
  // session_a: 10 facts in 000000.jsonl (1–4), 000001.jsonl (5–8), 000002.jsonl (9–10).
  beforeEach(async () => {
    const store = open({ segmentSize: 4 });
    await appendSteps(store, 'session_a', 10);
    await appendSteps(store, 'session_b', 3);
    await store.close();
  });

  /**
   * session_a cannot be read: reading it throws a StoreCorruptionError naming `file` (and
   * `line`), every time, never an empty or shortened session; findings() reports it; session_b
   * stays readable and writable. openRuns() reads only the record and the tail: when they show
   * the damage (`seenByOpenRuns`), it leaves session_a out instead of throwing.
   */
  async function expectCorrupt(
    file: string,
    line: number | undefined,
    message: RegExp,
    seenByOpenRuns = true,
  ) {
    const store = open({ segmentSize: 4 });
    const runB = { sessionId: 'session_b', turnId: 'turn_1', runId: 'run_1' };
    const runA = { ...runB, sessionId: 'session_a' };
    expect(await store.openRuns()).toEqual(seenByOpenRuns ? [runB] : [runA, runB]);
    const error = await store.read('session_a').catch((caught: unknown) => caught);
    expect(StoreCorruptionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ file, line });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(message);
    // Asking again gives the same error.
    await expect(store.read('session_a')).rejects.toMatchObject({
      name: 'StoreCorruptionError',
      file,
      line,
    });
    const findings = await store.findings();
    expect(findings.map(({ kind, sessionId }) => ({ kind, sessionId }))).toContainEqual({
      kind: 'unreadable',
      sessionId: 'session_a',
    });
    expect(findings.filter((finding) => finding.sessionId !== 'session_a')).toEqual([]);
    expect(findings.at(-1)).toEqual({
      kind: 'unreadable',
      sessionId: 'session_a',
      file,
      line,
      message: (error as Error).message,
    });
    expect((await store.read('session_b')).map((fact) => fact.seq)).toEqual([1, 2, 3]);
    await store.append('session_b', [b.steering('g4', 'run_1')]);
    expect((await store.read('session_b')).length).toBe(4);
  }

  it('names a line of a segment that is not JSON', async () => {
    const file = segment('session_a', 1);
    const lines = fileLines(file);
    lines[2] = '{"id":"session_a_6","seq":6,';
    writeLines(file, lines);
    await expectCorrupt(
      file,
      3,
      /line 3 is not valid: it is not JSON \(.+\); restore the file/,
      false,
    );
  });

  it('names an empty line inside a segment', async () => {
    const file = segment('session_a', 0);
    const lines = fileLines(file);
    lines.splice(2, 0, '');
    writeLines(file, lines);
    await expectCorrupt(file, 3, /line 3 is not valid: it is not JSON \(it is empty\)/, false);
  });

  /** Rewrites the fact on `line` of `file` (a JSON Lines segment). */
  function editFactLine(file: string, line: number, edit: (fact: Record<string, unknown>) => void) {
    const lines = fileLines(file);
    const fact = JSON.parse(lines[line - 1] ?? '{}') as Record<string, unknown>;
    edit(fact);
    lines[line - 1] = JSON.stringify(fact);
    writeLines(file, lines);
  }

  it('names a stored fact that lacks a field: its seq, type and field', async () => {
    const file = segment('session_a', 1);
    editFactLine(file, 3, (fact) => {
      delete fact.text;
    });
    await expectCorrupt(
      file,
      3,
      /the entry for seq 6 \(fact session_a_6\) is not a valid fact: steering\.received field text is missing \(expected string\)/,
      false,
    );
  });

  it('names a fact after its run ended (I7) instead of loading the session silently', async () => {
    const file = segment('session_a', 1);
    editFactLine(file, 3, (fact) => {
      delete fact.text;
      delete fact.messageId;
      Object.assign(fact, { type: 'run.ended', status: 'completed', reason: 'end_turn' });
    });
    // openRuns() finds it too: the tail's header says run_1 is open, the log says it ended.
    await expectCorrupt(
      file,
      4,
      /seq 7 \(steering\.received, fact session_a_7\) comes after the run\.ended of run run_1; a run ends once and nothing follows \(I7\)/,
    );
  });

  it('names a repeated fact id', async () => {
    const file = segment('session_a', 1);
    editFactLine(file, 4, (fact) => {
      fact.id = 'session_a_2';
    });
    await expectCorrupt(
      file,
      4,
      /seq 7 \(steering\.received, fact session_a_2\) repeats a fact id already used earlier/,
      false,
    );
  });

  it('names a segment cut short mid-line while a later segment exists', async () => {
    const file = segment('session_a', 1);
    truncateSync(file, statSync(file).size - 10);
    await expectCorrupt(
      file,
      5,
      /line 5 is not valid: it is cut short, yet a later segment exists/,
      false,
    );
  });

  it('names an emptied tail segment', async () => {
    const file = segment('session_a', 2);
    writeFileSync(file, '');
    await expectCorrupt(file, 1, /line 1 is not valid: it holds no complete fact/);
  });

  it('names a seq gap inside a segment', async () => {
    const file = segment('session_a', 1);
    const lines = fileLines(file);
    lines.splice(2, 1);
    writeLines(file, lines);
    await expectCorrupt(
      file,
      3,
      /seq 7 .* is where seq 6 belongs: the log has a gap or is out of order/,
      false,
    );
  });

  it('names a segment whose header does not continue the segment before', async () => {
    const file = segment('session_a', 2);
    const [header = '', ...facts] = fileLines(file);
    writeLines(file, [header.replace('"firstSeq":9', '"firstSeq":10'), ...facts]);
    await expectCorrupt(file, 1, /line 1 is not valid: it starts at seq 10 where seq 9 belongs/);
  });

  it('names a segment of another session put in its place', async () => {
    const file = segment('session_a', 0);
    writeFileSync(file, readFileSync(segment('session_b', 0)));
    await expectCorrupt(file, 1, /it belongs to session session_b, not session_a/, false);
  });

  it('names a tail replaced by a segment of the same name from another store', async () => {
    const file = segment('session_a', 2);
    writeLines(
      file,
      fileLines(file).map((line) => line.replaceAll('session_a_', 'other_')),
    );
    await expectCorrupt(
      file,
      undefined,
      /does not match .*session\.json: it starts with other_9 at seq 9, the record says session_a_9 at seq 9; the segment was replaced or edited/,
    );
  });

  it('names a deleted segment between others', async () => {
    const file = segment('session_a', 1);
    unlinkSync(file);
    await expectCorrupt(
      file,
      undefined,
      /000001\.jsonl is missing: .*session\.json lists it as segment 1 of session session_a \(facts from seq 5\); it was deleted or moved/,
    );
  });

  it('names a deleted tail segment, which would otherwise shorten the log silently', async () => {
    const file = segment('session_a', 2);
    unlinkSync(file);
    await expectCorrupt(file, undefined, /000002\.jsonl is missing: .*lists it as segment 2/);
  });

  it('names the first deleted segment when all of them are gone, never an empty session', async () => {
    for (const index of [0, 1, 2]) unlinkSync(segment('session_a', index));
    await expectCorrupt(segment('session_a', 0), undefined, /000000\.jsonl is missing/);
  });

  it('names a session folder emptied of its segments and its record', async () => {
    for (const index of [0, 1, 2]) unlinkSync(segment('session_a', index));
    unlinkSync(record('session_a'));
    const folder = path.dirname(record('session_a'));
    await expectCorrupt(
      folder,
      undefined,
      /holds no segment and no session record: its files were deleted/,
    );
  });

  it('names a deleted record', async () => {
    unlinkSync(record('session_a'));
    await expectCorrupt(
      record('session_a'),
      undefined,
      /session\.json is not a valid session record: it is missing \(deleted\?\) but the session has newer segments/,
    );
  });

  it('names a record that is not JSON', async () => {
    writeFileSync(record('session_a'), '{"format":');
    await expectCorrupt(record('session_a'), undefined, /session\.json is not valid JSON/);
  });

  it('names an edited open-runs summary in the tail header, on the fast path and on load', async () => {
    const file = segment('session_a', 2);
    const [header = '', ...facts] = fileLines(file);
    writeLines(file, [header.replace(/"openRuns":\[.*\]\}$/, '"openRuns":[]}'), ...facts]);
    const fastPath = open({ segmentSize: 4 });
    expect(await fastPath.openRuns()).toEqual([
      { sessionId: 'session_b', turnId: 'turn_1', runId: 'run_1' },
    ]);
    expect(await fastPath.findings()).toEqual([
      {
        kind: 'unreadable',
        sessionId: 'session_a',
        file,
        line: undefined,
        message: expect.stringMatching(
          /000002\.jsonl does not match .*session\.json: its header lists other open runs than the record/,
        ),
      },
    ]);
    await fastPath.close();
    await expectCorrupt(file, 1, /its openRuns summary does not match the facts before it/);
  });

  it('names a segment the record does not list', async () => {
    writeFileSync(segment('session_a', 3), readFileSync(segment('session_a', 2)));
    writeFileSync(segment('session_a', 4), readFileSync(segment('session_a', 2)));
    const file = segment('session_a', 4);
    await expectCorrupt(file, undefined, /000004\.jsonl is not listed in .*session\.json/);
  });
});

describe('lowdbStore after a crash', () => {
  beforeEach(async () => {
    const store = open({ segmentSize: 4 });
    await appendSteps(store, 'session_a', 10);
    await store.close();
  });

  it('cuts a torn last line (never acknowledged), reports it, and appends after it', async () => {
    const file = segment('session_a', 2);
    const whole = statSync(file).size;
    const lastLine = fileLines(file).at(-1) ?? '';
    truncateSync(file, whole - 7);
    const store = open({ segmentSize: 4 });
    expect((await store.read('session_a')).map((fact) => fact.seq)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    expect(await store.findings()).toEqual([
      {
        kind: 'torn-tail-cut',
        sessionId: 'session_a',
        file,
        line: 3,
        message: `lowdbStore: ${file} ended with ${Buffer.byteLength(lastLine) - 6} bytes of an unfinished line 3, a write a crash cut short before it was acknowledged; they were removed and nothing acknowledged was lost`,
      },
    ]);
    expect(statSync(file).size).toBe(whole - Buffer.byteLength(lastLine) - 1);
    await store.append('session_a', [storeFacts('session_a').steering('again', 'run_1')]);
    await store.close();
    const reopened = open({ segmentSize: 4 });
    expect(
      (await reopened.read('session_a')).map((fact) => `${fact.seq} ${fact.id}`).slice(-2),
    ).toEqual(['9 session_a_9', '10 again']);
    expect(await reopened.findings()).toEqual([]);
  });

  it('removes a segment whose creation a crash cut short, and reports it', async () => {
    // The tail filled up; the next segment was being created: its header is torn.
    const store = open({ segmentSize: 4 });
    await store.append(
      'session_a',
      ['x11', 'x12'].map((id) => storeFacts('session_a').steering(id, 'run_1')),
    );
    await store.close();
    const file = segment('session_a', 3);
    writeFileSync(file, '{"format":"turnlog.segment/2","sess');
    const reopened = open({ segmentSize: 4 });
    expect((await reopened.read('session_a')).length).toBe(12);
    expect(await reopened.findings()).toEqual([
      {
        kind: 'torn-tail-cut',
        sessionId: 'session_a',
        file,
        line: 1,
        message: expect.stringMatching(
          /was being created when a crash stopped the store, before any of its facts was acknowledged; it was removed/,
        ),
      },
    ]);
    await reopened.append('session_a', [storeFacts('session_a').steering('x13', 'run_1')]);
    expect((await reopened.read('session_a')).at(-1)).toMatchObject({ id: 'x13', seq: 13 });
  });

  it('lists a segment created just before a crash in the record when the session loads', async () => {
    const store = open({ segmentSize: 4 });
    await store.append(
      'session_a',
      ['x11', 'x12', 'x13'].map((id) => storeFacts('session_a').steering(id, 'run_1')),
    );
    await store.close();
    // As if the crash fell between creating 000003.jsonl and rewriting the record.
    const current = readFileSync(record('session_a'), 'utf8');
    const listed = JSON.parse(current) as { segments: { file: string; lastSeq?: number }[] };
    const behind = { ...listed, segments: listed.segments.slice(0, 3) };
    delete behind.segments[2]?.lastSeq;
    delete (behind.segments[2] as { lastId?: string }).lastId;
    writeFileSync(record('session_a'), JSON.stringify(behind));
    const reopened = open({ segmentSize: 4 });
    expect(await reopened.openRuns()).toEqual([
      { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_1' },
    ]);
    expect((await reopened.read('session_a')).length).toBe(13);
    expect(readFileSync(record('session_a'), 'utf8')).toBe(current);
    expect(await reopened.findings()).toEqual([]);
  });

  it('treats a removed session folder as a session that never existed (no store-wide index to tell)', async () => {
    rmSync(path.dirname(record('session_a')), { recursive: true });
    const store = open({ segmentSize: 4 });
    expect(await store.read('session_a')).toEqual([]);
    expect(await store.sessions()).toEqual([]);
  });
});
