import { factProblem } from '../events/check-fact.ts';
import type { Fact, NewFact } from '../events/facts.ts';
import { idProblem } from '../events/ids.ts';
import {
  type AppendOptions,
  ConcurrencyError,
  type OpenRun,
  RunSealedError,
  StoreInputError,
} from './event-store.ts';
import { cloneJson, copyPlainJson } from './plain-json.ts';

/**
 * One session's log in memory and the rules every store shares: `seq` assignment, optimistic
 * concurrency, idempotence on fact ids, sealed runs and input validation. A store keeps one
 * `SessionLog` per loaded session and adds only persistence around it.
 *
 * @example
 * const log = new SessionLog({ sessionId: 's1', storeName: 'memoryStore' });
 * const appended = log.append([fact], { expectedSeq: 0 }); // appended[0].seq === 1
 */
export class SessionLog {
  readonly sessionId: string;
  readonly #storeName: string;
  readonly #facts: Fact[] = [];
  readonly #ids = new Set<string>();
  readonly #endedRuns = new Set<string>();
  readonly #openRuns = new Map<string, OpenRun>();

  constructor(options: { sessionId: string; storeName: string }) {
    this.sessionId = options.sessionId;
    this.#storeName = options.storeName;
  }

  /** The `seq` of the last fact (0 for an empty session). */
  get lastSeq(): number {
    return this.#facts.length;
  }

  /**
   * Adds a fact that was already stored (a seed or a loaded segment), checked as part of the
   * whole session: its `id` must be new, and its run must not have ended (I7: one `run.ended`,
   * nothing after it). Returns what is wrong — the fact is then not added, and the caller reports
   * the session instead of loading it silently — or `undefined` once added. The caller checked the
   * fact itself with `storedFactProblem` first.
   */
  restore(fact: Fact): string | undefined {
    if (this.#ids.has(fact.id)) {
      return `${where(fact)} repeats a fact id already used earlier in the session`;
    }
    if (this.#endedRuns.has(fact.runId)) {
      const what =
        fact.type === 'run.ended' ? 'is a second run.ended of' : 'comes after the run.ended of';
      return `${where(fact)} ${what} run ${fact.runId}; a run ends once and nothing follows (I7)`;
    }
    this.#track(fact);
    return undefined;
  }

  /**
   * Validates and appends `facts`, all or nothing, and returns the facts it stored (the log's own
   * objects: copy them before handing them out). Known ids are skipped; when every fact is known
   * the append succeeds whatever `expectedSeq` says (the caller is retrying an append whose answer
   * it lost).
   */
  append(facts: readonly NewFact[], options: AppendOptions = {}): Fact[] {
    const where = `${this.#storeName}.append('${this.sessionId}')`;
    const candidates = validateNewFacts(facts, options, { where, sessionId: this.sessionId });
    const fresh = freshFacts(candidates, (id) => this.#ids.has(id));
    if (fresh.length === 0) return [];
    const appended = sequenceFacts(fresh, {
      where,
      sessionId: this.sessionId,
      expectedSeq: options.expectedSeq,
      lastSeq: this.lastSeq,
      isEnded: (runId) => this.#endedRuns.has(runId),
    });
    for (const fact of appended) this.#track(fact);
    return appended;
  }

  /** Copies of the facts with `fromSeq <= seq <= throughSeq`, in `seq` order. */
  read(fromSeq = 1, throughSeq = this.lastSeq): Fact[] {
    return this.#facts.slice(Math.max(fromSeq, 1) - 1, throughSeq).map(cloneJson);
  }

  /** The log's own facts with `fromSeq <= seq <= throughSeq` (not copies: do not hand out). */
  slice(fromSeq: number, throughSeq: number): Fact[] {
    return this.#facts.slice(fromSeq - 1, throughSeq);
  }

  /** Runs with `run.started` and no `run.ended`, in the order they started. */
  openRuns(): OpenRun[] {
    return [...this.#openRuns.values()].map((run) => ({ ...run }));
  }

  #track(fact: Fact): void {
    this.#facts.push(fact);
    this.#ids.add(fact.id);
    if (fact.type === 'run.ended') this.#endedRuns.add(fact.runId);
    trackOpenRun(this.#openRuns, fact);
  }
}

/**
 * Checks an `append`'s options and facts and returns detached plain-JSON copies of the facts, or
 * throws `StoreInputError` naming the first bad one (I11: nothing of the append is stored).
 */
export function validateNewFacts(
  facts: readonly NewFact[],
  options: AppendOptions,
  context: { where: string; sessionId: string },
): NewFact[] {
  const { where, sessionId } = context;
  const { expectedSeq } = options;
  if (expectedSeq !== undefined && !(Number.isInteger(expectedSeq) && expectedSeq >= 0)) {
    throw new StoreInputError({
      message: `${where}: expectedSeq must be a whole number >= 0 (the last seq you saw, 0 for an empty session), got ${String(expectedSeq)}`,
      sessionId,
    });
  }
  if (!Array.isArray(facts)) {
    throw new StoreInputError({
      message: `${where}: facts must be an array of facts, got ${typeof facts}`,
      sessionId,
    });
  }
  return facts.map((fact, index) => {
    const copy = copyPlainJson(fact);
    const problem = copy.ok
      ? newFactProblem(copy.value, sessionId)
      : `${copy.path.replace(/^\$/, 'the fact')} ${copy.problem}`;
    if (problem === undefined) return copy.ok ? (copy.value as unknown as NewFact) : fact;
    const id = typeof (fact as { id?: unknown })?.id === 'string' ? ` (id ${fact.id})` : '';
    throw new StoreInputError({
      message: `${where}: fact ${index}${id} was not stored: ${problem}; nothing of this append was stored`,
      sessionId,
      factIndex: index,
    });
  });
}

/**
 * The facts of an append that are new: an id already stored (`isKnown`), or repeated earlier in
 * the same append, is a no-op (a retried append).
 */
export function freshFacts(
  candidates: readonly NewFact[],
  isKnown: (id: string) => boolean,
): NewFact[] {
  const batchIds = new Set<string>();
  return candidates.filter((fact) => {
    if (isKnown(fact.id) || batchIds.has(fact.id)) return false;
    batchIds.add(fact.id);
    return true;
  });
}

/**
 * Gives an append's new facts their `seq` after `lastSeq`, applying the rules that need the
 * session's state: `expectedSeq` (else `ConcurrencyError`) and sealed runs (`isEnded`, or ended
 * earlier in this append: `RunSealedError`, I7). Call it with at least one fresh fact: when every
 * fact is known the append succeeds whatever `expectedSeq` says (a lost answer retried).
 */
export function sequenceFacts(
  fresh: readonly NewFact[],
  context: {
    where: string;
    sessionId: string;
    expectedSeq: number | undefined;
    lastSeq: number;
    isEnded: (runId: string) => boolean;
  },
): Fact[] {
  const { where, sessionId, expectedSeq, lastSeq } = context;
  if (expectedSeq !== undefined && expectedSeq !== lastSeq) {
    throw new ConcurrencyError({
      message: `${where}: expected the last seq to be ${expectedSeq} but it is ${lastSeq}; read the facts after seq ${expectedSeq}, decide again, and append with expectedSeq ${lastSeq}`,
      sessionId,
      expectedSeq,
      actualSeq: lastSeq,
    });
  }
  const endedInBatch = new Set<string>();
  for (const fact of fresh) {
    // I7: nothing new joins a run after its run.ended, not even later in the same append.
    if (context.isEnded(fact.runId) || endedInBatch.has(fact.runId)) {
      throw new RunSealedError({
        message: `${where}: run ${fact.runId} already ended, so fact ${fact.id} (${fact.type}) cannot join it; start a new run for new work`,
        sessionId,
        runId: fact.runId,
      });
    }
    if (fact.type === 'run.ended') endedInBatch.add(fact.runId);
  }
  return fresh.map((fact, index) => withSeq(fact, lastSeq + index + 1));
}

/** Updates a map of open runs (by `runId`) with one fact, in `seq` order. */
export function trackOpenRun(openRuns: Map<string, OpenRun>, fact: Fact): void {
  if (fact.type === 'run.started') {
    openRuns.set(fact.runId, { sessionId: fact.sessionId, turnId: fact.turnId, runId: fact.runId });
  } else if (fact.type === 'run.ended') {
    openRuns.delete(fact.runId);
  }
}

/**
 * What is wrong with a fact read back from storage as the `seq`-th fact of `sessionId`, or
 * `undefined` when it is a well-formed stored fact in its place.
 */
export function storedFactProblem(
  fact: unknown,
  options: { sessionId: string; seq: number },
): string | undefined {
  const problem = factProblem(fact, { stored: true });
  if (problem !== undefined) {
    const { id } = (fact ?? {}) as { id?: unknown };
    const named = typeof id === 'string' && id !== '' ? ` (fact ${id})` : '';
    return `the entry for seq ${options.seq}${named} is not a valid fact: ${problem}`;
  }
  const stored = fact as Fact;
  if (stored.seq !== options.seq) {
    return `seq ${stored.seq} (fact ${stored.id}) is where seq ${options.seq} belongs: the log has a gap or is out of order`;
  }
  if (stored.sessionId !== options.sessionId) {
    return `fact ${stored.id} belongs to session ${stored.sessionId}, not ${options.sessionId}`;
  }
  return undefined;
}

/** Checks a session id given to a store: a non-empty string. */
export function checkSessionId(sessionId: unknown, where: string): asserts sessionId is string {
  if (typeof sessionId !== 'string' || sessionId.length === 0) {
    throw new StoreInputError({
      message: `${where}: the session id must be a non-empty string, got ${JSON.stringify(sessionId) ?? String(sessionId)}`,
      sessionId: undefined,
    });
  }
  const problem = idProblem(sessionId);
  if (problem !== undefined) {
    throw new StoreInputError({
      message: `${where}: the session id ${JSON.stringify(sessionId)} cannot be a key: ${problem}; use ids of well-formed text without NUL`,
      sessionId: undefined,
    });
  }
}

/** Checks `read`'s `fromSeq`: absent, or a whole number (values below 1 read from the start). */
export function checkFromSeq(fromSeq: unknown, where: string): void {
  if (fromSeq !== undefined && !Number.isInteger(fromSeq)) {
    throw new StoreInputError({
      message: `${where}: fromSeq must be a whole number, got ${String(fromSeq)}`,
      sessionId: undefined,
    });
  }
}

/**
 * What is wrong with a fact given to `append` for `sessionId` (after `copyPlainJson`), or
 * `undefined` when it may be stored: its envelope without a `seq`, this session, and its type's
 * schema (every field of its payload).
 */
export function newFactProblem(value: unknown, sessionId: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'it is not an object';
  }
  const fact = value as Record<string, unknown>;
  if ('seq' in fact) return 'it carries a seq, which only the store assigns';
  if (typeof fact.sessionId === 'string' && fact.sessionId !== sessionId) {
    return `its sessionId ${JSON.stringify(fact.sessionId)} is not the session it is appended to`;
  }
  // A worker's fencing token (see RunLeases): both fields or neither.
  if ((fact.workerId === undefined) !== (fact.leaseEpoch === undefined)) {
    return 'its workerId and leaseEpoch go together: give both (an append under a lease) or neither';
  }
  return factProblem(value, { stored: false });
}

/** `seq 7 (steering.received, fact f7)`: a stored fact, named in a finding. */
function where(fact: Fact): string {
  return `seq ${fact.seq} (${fact.type}, fact ${fact.id})`;
}

function withSeq(fact: NewFact, seq: number): Fact {
  // Envelope order `id, seq, …` keeps stored JSON readable; the rest keeps the caller's order.
  const { id, ...rest } = fact;
  return { id, seq, ...rest } as Fact;
}
