import type { Fact } from '../../events/facts.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { isIdle } from '../cli-runtime.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import { parseCount } from '../duration.ts';
import { timelineEntry, timelineLine } from '../fact-line.ts';
import { sessionFacts } from '../session-facts.ts';

/** `turnlog tail SESSION`: the session's last facts, then each new one as it is appended. */
export const tailCommand: CommandDefinition = {
  name: 'tail',
  summary: 'follow a session live: its last facts, then each new one as any process appends it',
  details:
    'Runs until Ctrl-C (exit 0), or with --until until the latest run is idle (parked for a person, or ended) or has ended. With --json: one JSON line per fact (the entries of show --json). On the folder store, which one process holds at a time, it follows what is appended while it holds the folder; follow a running application on PostgreSQL.',
  args: [{ name: 'SESSION', description: 'the session id' }],
  options: [
    {
      name: 'lines',
      value: 'N',
      description: 'how many of the last facts to print first',
      default: '10',
    },
    {
      name: 'until',
      value: 'WHEN',
      description:
        'exit when the latest run is idle (parked for a person, or ended; at once if it is already) or has ended',
      choices: ['idle', 'ended'],
    },
  ],
  uses: { store: true, runtime: 'none' },
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const store = await context.store();
    const arrived = new FactQueue(context.signal);
    // Subscribe before reading: a fact appended in between is in one or the other (seq dedupes).
    const unsubscribe = store.subscribe(sessionId, (fact) => arrived.push(fact));
    try {
      const facts = await sessionFacts(store, sessionId);
      const lines = parseCount(String(context.options.lines), 'lines');
      const view = projectTurn(facts);
      for (const fact of facts.slice(-lines)) print(context, fact, view);
      const until = context.options.until;
      const done = (fact: Fact) =>
        until === 'idle' ? isIdle(fact) : until === 'ended' && fact.type === 'run.ended';
      let last = facts.at(-1) as Fact;
      while (!done(last)) {
        const fact = await arrived.next();
        if (fact === undefined) break;
        if (fact.seq <= last.seq) continue;
        facts.push(fact);
        print(context, fact, fact.type === 'step.completed' ? projectTurn(facts) : undefined);
        last = fact;
      }
      return 'ok';
    } finally {
      unsubscribe();
    }
  },
};

function print(
  context: CommandContext,
  fact: Fact,
  view: ReturnType<typeof projectTurn> | undefined,
): void {
  const entry = timelineEntry(fact, view);
  if (context.json) context.output.jsonLine(entry);
  else context.output.line(timelineLine(entry));
}

/** Facts as they arrive, awaited one at a time; `undefined` once the signal aborts. */
class FactQueue {
  readonly #facts: Fact[] = [];
  #wake: (() => void) | undefined;
  readonly #signal: AbortSignal;

  constructor(signal: AbortSignal) {
    this.#signal = signal;
    signal.addEventListener('abort', () => this.#wake?.(), { once: true });
  }

  push(fact: Fact): void {
    this.#facts.push(fact);
    this.#wake?.();
  }

  async next(): Promise<Fact | undefined> {
    while (this.#facts.length === 0) {
      if (this.#signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
    return this.#facts.shift();
  }
}
