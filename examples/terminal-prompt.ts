// Questions on stdin for the examples, one line per answer. Lines are queued as they arrive, so
// answers piped in ahead of time (`printf 'y\ny\n' | …`) are not lost between questions.
import { createInterface } from 'node:readline';

/** A terminal question-asker over stdin. */
export interface TerminalPrompt {
  /**
   * Prints `question` with its choices and resolves with the first choice the answer starts
   * with (asking again on anything else), or `undefined` when stdin ended or `cancel()` was called.
   */
  choose<TChoice extends string>(
    question: string,
    choices: readonly TChoice[],
  ): Promise<TChoice | undefined>;
  /** Resolves a question being asked with `undefined` (e.g. on Ctrl-C). */
  cancel(): void;
  /** Stops reading stdin so the process can exit. */
  close(): void;
}

/**
 * Reads answers from stdin. Not a terminal-mode readline: Ctrl-C stays a real SIGINT for the
 * process, which the caller handles.
 *
 * @example
 * const prompt = createTerminalPrompt();
 * const answer = await prompt.choose('Allow it?', ['yes', 'no']); // 'y' → 'yes'
 * prompt.close();
 */
export function createTerminalPrompt(input: NodeJS.ReadableStream = process.stdin): TerminalPrompt {
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let ended = false;
  const reader = createInterface({ input, terminal: false });
  reader.on('line', (line) => {
    if (waiting === undefined) return void lines.push(line);
    const wake = waiting;
    waiting = undefined;
    wake(line);
  });
  reader.on('close', () => {
    ended = true;
    waiting?.(undefined);
    waiting = undefined;
  });

  function nextLine(): Promise<string | undefined> {
    const line = lines.shift();
    if (line !== undefined || ended) return Promise.resolve(line);
    return new Promise((resolve) => {
      waiting = resolve;
    });
  }

  return {
    async choose(question, choices) {
      const keys = choices.map((choice) => choice[0]).join('/');
      while (true) {
        process.stdout.write(`${question} [${keys}] `);
        const line = await nextLine();
        if (line === undefined) {
          if (ended) process.stdout.write('\n');
          return undefined;
        }
        const answer = line.trim().toLowerCase();
        const chosen = choices.find((choice) => answer !== '' && choice.startsWith(answer));
        if (chosen !== undefined) {
          // Piped answers do not echo; show them so the transcript reads like a session.
          if (!process.stdin.isTTY) process.stdout.write(`${line.trim()}\n`);
          return chosen;
        }
      }
    },
    cancel() {
      waiting?.(undefined);
      waiting = undefined;
    },
    close() {
      reader.close();
    },
  };
}
