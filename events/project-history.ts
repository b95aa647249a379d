import type { Fact, FactOf } from './facts.ts';
import { requestSeq, stepMessages, summaryMessage } from './history-messages.ts';
import { type ModelMessage, type UserPart, userContent } from './messages.ts';
import { createRunIndex, type RunFacts, type StepFacts } from './run-facts.ts';

export { compactionSummaryHeader } from './history-messages.ts';

/** Options of `projectHistory`. */
export interface ProjectHistoryOptions {
  /** The provider the next request goes to (`ModelAdapter.provider`, e.g. `openai.responses`). */
  provider: string;
}

/**
 * Projects a session's facts to the messages the next request carries (no system message: the
 * system prompt travels separately). Pure and deterministic (I1).
 *
 * - each run's input is a user message; each completed step is an assistant message
 *   (its content parts as stored, then its settled calls), followed by one tool message with
 *   the calls' `tool.settled` texts in call order;
 * - reasoning, provider-executed tool calls and results, and provider options on any part, are
 *   kept only for the step's own provider;
 * - steering is a user message where it arrived; steering the step's request did not include
 *   goes after that step's messages, so a call and its result are never split;
 * - the latest `compaction.completed` replaces every fact up to `throughSeq` by one user
 *   message; a step is kept or replaced whole;
 * - failed steps, unfinished steps and calls without `tool.settled` leave nothing.
 *
 * @example
 * const messages = projectHistory(await store.read(sessionId), { provider: adapter.provider });
 */
export function projectHistory(
  facts: readonly Fact[],
  { provider }: ProjectHistoryOptions,
): ModelMessage[] {
  const history = new HistoryFold(provider);
  for (const fact of facts) history.add(fact);
  return history.messages();
}

/** `projectHistory` for a log that grows: each call reads only the facts appended since the last. */
export interface HistoryProjection {
  /** Exactly `projectHistory(facts, options)`. */
  project(facts: readonly Fact[], options: ProjectHistoryOptions): ModelMessage[];
}

/**
 * A `projectHistory` that keeps the previous projection of a session's log and adds only the
 * facts appended since: a step costs the same on top of 10,000 facts as on top of 10. It goes on
 * from where it stopped when the facts array is the one it read (then the last fact read is
 * checked) or another array that starts with the very fact objects it read, in the same places
 * (a copy of the log, made by the next run of the session: pointer comparisons, no fact is
 * read). Anything unexpected projects the log again in full: another provider, an array that does
 * not start with the facts read (facts read again from a store, a different session), a
 * compaction, a fact placed where another already is.
 *
 * @example
 * const history = createHistoryProjection();
 * const messages = history.project(driver.facts, { provider: adapter.provider });
 */
export function createHistoryProjection(): HistoryProjection {
  return new IncrementalHistory();
}

class IncrementalHistory implements HistoryProjection {
  /** The array read last, and the facts read so far (the projection's own list of them). */
  #array: readonly Fact[] | undefined;
  #read: Fact[] = [];
  #history: HistoryFold | undefined;

  project(facts: readonly Fact[], { provider }: ProjectHistoryOptions): ModelMessage[] {
    let history = this.#history;
    if (history === undefined || history.provider !== provider || !this.#continues(facts)) {
      history = new HistoryFold(provider);
      this.#history = history;
      this.#read = [];
    }
    this.#array = facts;
    const read = this.#read;
    for (let index = read.length; index < facts.length; index += 1) {
      const fact = facts[index] as Fact;
      read.push(fact);
      history.add(fact);
    }
    return history.messages();
  }

  /** Whether `facts` starts with the very facts read so far (the same objects, in order). */
  #continues(facts: readonly Fact[]): boolean {
    const read = this.#read;
    if (facts.length < read.length) return false;
    // The array read last, grown at its end: its last fact read is still in its place.
    if (facts === this.#array) return read.length === 0 || facts[read.length - 1] === read.at(-1);
    for (let index = read.length - 1; index >= 0; index -= 1) {
      if (facts[index] !== read[index]) return false;
    }
    return true;
  }
}

/** A piece of history and where the log puts it. */
interface Piece {
  seq: number;
  /** Breaks a tie on `seq`: a step goes after the fact its request was projected through. */
  after: 0 | 1;
  messages: ModelMessage[];
  /** A step's piece, whose messages change as its calls settle. */
  step?: { facts: StepFacts; completed: FactOf<'step.completed'>; stale: boolean };
}

/**
 * The history of a log read fact by fact: the shared run index, the pieces in their places
 * (sorted by `seq`, then `after`), and their messages laid end to end. A fact adds a piece,
 * or makes one step's messages stale; only the pieces from the first change on are laid out
 * again. A compaction, or a tie between two places, rebuilds the pieces from the index.
 */
class HistoryFold {
  readonly provider: string;
  readonly #index = createRunIndex();
  #compaction: FactOf<'compaction.completed'> | undefined;
  #summary: ModelMessage | undefined;
  #pieces: Piece[] = [];
  /** False once the pieces must be rebuilt from the index. */
  #placed = true;
  /** The messages of `#pieces[0 .. #laidOut)`, end to end; `#starts[i]`: where piece i begins. */
  #laid: ModelMessage[] = [];
  #starts: number[] = [];
  #laidOut = 0;

  constructor(provider: string) {
    this.provider = provider;
  }

  add(fact: Fact): void {
    const filed = this.#index.add(fact);
    if (fact.type === 'compaction.completed') {
      // The latest compaction wins and replaces everything up to its throughSeq.
      this.#compaction = fact;
      this.#summary = summaryMessage(fact);
      this.#placed = false;
    }
    if (!this.#placed) return;
    const throughSeq = this.#throughSeq();
    switch (fact.type) {
      case 'run.started':
        if (filed.run.runStarted.length === 1 && fact.seq > throughSeq)
          this.#insert(userAt(fact.seq, userContent(fact.input)));
        return;
      case 'steering.received':
        if (fact.seq > throughSeq) this.#insert(userAt(fact.seq, fact.text));
        return;
      case 'step.completed':
        if (filed.step?.completions.length === 1 && fact.seq > throughSeq)
          this.#insert(stepAt(filed.step, fact));
        return;
      case 'tool.settled':
        // Only a call's first result is shown; a step summarized away has no piece.
        if (filed.call?.settled.length === 1) this.#stale(filed.step);
        return;
      default:
        return;
    }
  }

  messages(): ModelMessage[] {
    if (!this.#placed) this.#rebuild();
    const pieces = this.#pieces;
    if (this.#laidOut < pieces.length) {
      // Pieces from #laidOut on are laid out again (a new last piece starts where the laid end).
      this.#laid.length = this.#starts[this.#laidOut] ?? this.#laid.length;
      for (let index = this.#laidOut; index < pieces.length; index += 1) {
        const piece = pieces[index] as Piece;
        if (piece.step?.stale) {
          piece.messages = stepMessages(piece.step.facts, piece.step.completed, this.provider);
          piece.step.stale = false;
        }
        this.#starts[index] = this.#laid.length;
        for (const message of piece.messages) this.#laid.push(message);
      }
      this.#starts.length = pieces.length;
      this.#laidOut = pieces.length;
    }
    // A new array each time: a request holds it while the log grows.
    return this.#summary === undefined ? [...this.#laid] : [this.#summary, ...this.#laid];
  }

  #throughSeq(): number {
    return this.#compaction?.throughSeq ?? 0;
  }

  /** Places a piece after every piece before it; a tie with a placed piece rebuilds instead. */
  #insert(piece: Piece): void {
    const pieces = this.#pieces;
    let low = 0;
    let high = pieces.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const other = pieces[middle] as Piece;
      if (other.seq < piece.seq || (other.seq === piece.seq && other.after < piece.after))
        low = middle + 1;
      else high = middle;
    }
    const next = pieces[low];
    if (next !== undefined && next.seq === piece.seq && next.after === piece.after) {
      // Two pieces in one place: only the full projection's order (run by run) decides.
      this.#placed = false;
      return;
    }
    pieces.splice(low, 0, piece);
    this.#laidOut = Math.min(this.#laidOut, low);
  }

  #stale(step: StepFacts | undefined): void {
    for (let index = this.#pieces.length - 1; index >= 0; index -= 1) {
      const stepPiece = (this.#pieces[index] as Piece).step;
      if (stepPiece === undefined || stepPiece.facts !== step) continue;
      stepPiece.stale = true;
      this.#laidOut = Math.min(this.#laidOut, index);
      return;
    }
  }

  /** Places every piece again from the index, as one pass over the log would. */
  #rebuild(): void {
    const throughSeq = this.#throughSeq();
    const placed: Piece[] = [];
    for (const run of this.#index.runs()) placed.push(...runPieces(run, throughSeq));
    placed.sort((left, right) => left.seq - right.seq || left.after - right.after);
    this.#pieces = placed;
    this.#laid = [];
    this.#starts = [];
    this.#laidOut = 0;
    this.#placed = true;
  }
}

/** A run's pieces in the order one pass over the log places them: input, steering, steps. */
function runPieces(run: RunFacts, throughSeq: number): Piece[] {
  const pieces: Piece[] = [];
  const started = run.runStarted[0];
  if (started !== undefined && started.seq > throughSeq) {
    pieces.push(userAt(started.seq, userContent(started.input)));
  }
  for (const steering of run.steering) {
    if (steering.seq > throughSeq) pieces.push(userAt(steering.seq, steering.text));
  }
  for (const step of run.steps) {
    const completed = step.completions[0];
    // I6: a step is summarized or shown whole, so no call loses its result.
    if (completed === undefined || completed.seq <= throughSeq) continue;
    pieces.push(stepAt(step, completed));
  }
  return pieces;
}

function userAt(seq: number, content: string | UserPart[]): Piece {
  return { seq, after: 0, messages: [{ role: 'user', content }] };
}

function stepAt(step: StepFacts, completed: FactOf<'step.completed'>): Piece {
  return {
    seq: requestSeq(step, completed),
    after: 1,
    messages: [],
    step: { facts: step, completed, stale: true },
  };
}
