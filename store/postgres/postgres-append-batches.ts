import type { Fact } from '../../events/facts.ts';
import {
  isConnectionError,
  onConnection,
  type PgPool,
  type PgQueryable,
  type PostgresSchema,
} from './postgres-connection.ts';
import { notificationChannel } from './postgres-notifications.ts';

/**
 * One session's part of a write through `append_facts` (the function of migration 3): the facts
 * to store with their seqs, the last seq they follow, and what the database must find for them
 * to be stored — unless `checked`, when the caller already decided under the session's lock.
 */
export interface AppendPart {
  sessionId: string;
  /** The session's last seq before these facts (the append's `expectedSeq`). */
  lastSeq: number;
  appended: readonly Fact[];
  /** Per run of the facts, the lease token they carry (`undefined` fields: none). */
  tokens: ReadonlyMap<string, { workerId: string | undefined; epoch: number | undefined }>;
  /** True when the caller checked the part under the session's lock (exact path, import). */
  checked: boolean;
}

/**
 * Writes parts in the caller's transaction (or, outside one, in the statement's own): one
 * statement, values as parameters, planned once per connection by the function. Resolves with
 * per part whether it was stored.
 */
export async function writeParts(
  client: PgQueryable,
  schema: PostgresSchema,
  parts: readonly AppendPart[],
  /** Per part, its facts' JSON (`JSON.stringify`), when the caller has it already. */
  bodies: readonly (readonly string[])[] = parts.map(factBodies),
): Promise<boolean[]> {
  // Each written part notifies its session's channel (the function's one channel is the
  // schema's, which nobody LISTENs on since issue 26: its parts carry no payload for it).
  const { rows } = await client.query(
    `SELECT written, (SELECT count(pg_notify(channel, last_seq))
       FROM unnest(written, $4::text[], $5::text[]) AS part(stored, channel, last_seq)
       WHERE stored) AS notified
     FROM (SELECT ${schema.sql}.append_facts($1::jsonb, $2::text, $3::text) AS written) AS appended`,
    appendParameters(schema, parts, bodies),
  );
  return (rows[0]?.written as boolean[] | undefined) ?? [];
}

/**
 * `append_facts`' three parameters — the parts (small, jsonb), the bodies (one text), the channel
 * — and per part its session's notification channel and payload (its last seq).
 */
function appendParameters(
  schema: PostgresSchema,
  parts: readonly AppendPart[],
  bodies: readonly (readonly string[])[],
): unknown[] {
  const meta = parts.map((part) => {
    const lastSeq = part.appended.at(-1)?.seq ?? part.lastSeq;
    return {
      s: part.sessionId,
      e: part.lastSeq,
      l: lastSeq,
      ...(part.checked && { w: true }),
      r: [...part.tokens].map(([runId, { workerId, epoch }]) =>
        workerId === undefined || epoch === undefined
          ? [runId, null, null]
          : [runId, workerId, epoch],
      ),
      f: part.appended.map((fact) => [
        fact.seq,
        fact.id,
        fact.runId,
        fact.type,
        fact.workerId ?? null,
        fact.leaseEpoch ?? null,
      ]),
      c: runChanges(part.appended),
    };
  });
  // U+0001 is never in JSON.stringify's output (it escapes every control character).
  const channels = parts.map((part) => notificationChannel(schema, 'f', part.sessionId));
  const lastSeqs = meta.map((part) => String(part.l));
  return [JSON.stringify(meta), bodies.flat().join('\u0001'), schema.channel, channels, lastSeqs];
}

/** A part's facts as the JSON text stored in the `body` column. */
function factBodies(part: AppendPart): string[] {
  return part.appended.map((fact) => JSON.stringify(fact));
}

/** What an append changes in the runs index: per run it starts or ends, [run, turn, started, ended]. */
function runChanges(appended: readonly Fact[]): [string, string, number | null, number | null][] {
  const runs = new Map<string, [string, string, number | null, number | null]>();
  for (const fact of appended) {
    if (fact.type !== 'run.started' && fact.type !== 'run.ended') continue;
    const run = runs.get(fact.runId) ?? [fact.runId, fact.turnId, null, null];
    if (fact.type === 'run.started') run[2] ??= fact.seq;
    else run[3] = fact.seq;
    runs.set(fact.runId, run);
  }
  return [...runs.values()];
}

/**
 * True when the batch's connection failed or the server ended the session (SQLSTATE classes 08
 * and 57: whether the COMMIT happened is unknown, so no part may be sent again).
 */
function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return isConnectionError(error) || (typeof code === 'string' && /^(08|57)/.test(code));
}

interface Queued {
  part: AppendPart;
  /** Sent in a batch of its own (its batch failed as a whole: each part learns its own outcome). */
  alone?: boolean;
  bodies: string[];
  bytes: number;
  resolve: (written: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit across sessions: the fast-path appends of every session of the store that are
 * ready at the same moment go to PostgreSQL in one statement, one transaction, one round trip
 * (one WAL flush for all of them). Parts queue while a batch is in flight and go together on the
 * next `setImmediate`, sorted by session (every batch takes the session locks in one order),
 * up to `maxBytes` of facts; a larger part goes alone at once, beside the batches, so a 50 MB
 * tool output delays no other run's append.
 * Each part keeps its own belief check: a part whose belief does not hold wrote nothing and
 * resolves `false` (its append goes the exact path) while the others commit. A batch the server
 * refused as a whole with an SQL error (a deadlock, a statement timeout: nothing of it was
 * written) sends each part again in a batch of its own, which fails, or not, as the append would
 * alone; a batch of one rejects with the error, and a batch whose connection failed rejects every
 * part with it (each may or may not be stored, as for one append).
 */
export class AppendBatches {
  readonly #pool: PgPool;
  readonly #schema: PostgresSchema;
  readonly #maxInFlight: number;
  readonly #maxBytes: number;
  readonly #queued: Queued[] = [];
  #inFlight = 0;
  #scheduled = false;

  constructor(options: {
    pool: PgPool;
    schema: PostgresSchema;
    /** Batches on their way at once (each on its own connection). Default 1. */
    maxInFlight?: number;
    /** A batch takes parts until their facts' JSON passes this many characters. Default 4 MiB. */
    maxBytes?: number;
  }) {
    this.#pool = options.pool;
    this.#schema = options.schema;
    this.#maxInFlight = options.maxInFlight ?? 1;
    this.#maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
  }

  /** Resolves true once the part is committed, false when the database found its belief false. */
  write(part: AppendPart): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const bodies = factBodies(part);
      const bytes = bodies.reduce((sum, body) => sum + body.length, 0);
      this.#queued.push({ part, bodies, bytes, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#queued.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      // A part larger than a batch goes at once, on a connection of its own, outside the limit:
      // the seconds a 50 MB fact takes to send and store hold up no other run's append.
      for (const queued of this.#takeLarge()) void this.#send([queued], false);
      while (this.#inFlight < this.#maxInFlight && this.#queued.length > 0) {
        void this.#send(this.#take(), true);
      }
    });
  }

  /** The queued parts larger than `maxBytes`, each a batch of its own. */
  #takeLarge(): Queued[] {
    const large = this.#queued.filter((queued) => queued.bytes > this.#maxBytes);
    if (large.length > 0) {
      const rest = this.#queued.filter((queued) => queued.bytes <= this.#maxBytes);
      this.#queued.splice(0, this.#queued.length, ...rest);
    }
    return large;
  }

  /** The next batch: parts in call order, one per session, up to `maxBytes` (at least one). */
  #take(): Queued[] {
    const batch: Queued[] = [];
    const sessions = new Set<string>();
    let bytes = 0;
    for (let index = 0; index < this.#queued.length; ) {
      const queued = this.#queued[index] as Queued;
      const fits = batch.length === 0 || (bytes + queued.bytes <= this.#maxBytes && !queued.alone);
      if (!fits) break;
      if (sessions.has(queued.part.sessionId)) {
        index += 1;
        continue;
      }
      sessions.add(queued.part.sessionId);
      bytes += queued.bytes;
      batch.push(queued);
      this.#queued.splice(index, 1);
      if (queued.alone === true) break;
    }
    return batch.sort((left, right) =>
      left.part.sessionId < right.part.sessionId
        ? -1
        : left.part.sessionId > right.part.sessionId
          ? 1
          : 0,
    );
  }

  /** Sends a batch; `counted`: it counts against `maxInFlight` (a large part alone does not). */
  async #send(batch: Queued[], counted: boolean): Promise<void> {
    if (counted) this.#inFlight += 1;
    try {
      const written = await onConnection(this.#pool, (client) =>
        writeParts(
          client,
          this.#schema,
          batch.map((queued) => queued.part),
          batch.map((queued) => queued.bodies),
        ),
      );
      for (const [index, queued] of batch.entries()) queued.resolve(written[index] === true);
    } catch (error) {
      if (batch.length === 1 || connectionLost(error)) {
        for (const queued of batch) queued.reject(error);
      } else {
        // Refused as a whole (a deadlock, a statement timeout): nothing of it was written.
        // Each part goes again alone, so its append fails, or not, as it would on its own.
        for (const queued of batch) queued.alone = true;
        this.#queued.unshift(...batch);
      }
    } finally {
      if (counted) this.#inFlight -= 1;
      this.#schedule();
    }
  }
}
