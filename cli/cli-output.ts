/** Where the CLI writes: results to `stdout`, progress and notes to `stderr`. */
export interface CliStreams {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
}

/** Progress of one long piece of work: `advance()` per item, `done()` at the end. */
export interface Progress {
  advance(count?: number): void;
  done(): void;
}

/**
 * The CLI's output. Results go to stdout (text, or JSON with `--json`); progress and notes go to
 * stderr, so `turnlog check --json > report.json` stays one JSON document.
 */
export class CliOutput {
  readonly #streams: CliStreams;
  readonly #progress: boolean;

  constructor(streams: CliStreams, options: { progress: boolean }) {
    this.#streams = streams;
    this.#progress = options.progress;
  }

  /** One line of the text result. */
  line(text = ''): void {
    this.#streams.stdout.write(`${text}\n`);
  }

  /** The JSON result: one document, indented; a field without a value is `null`, never left out. */
  json(value: unknown): void {
    this.#streams.stdout.write(`${JSON.stringify(value, keepUnknown, 2)}\n`);
  }

  /** One JSON line (for a stream of results, `tail --json`). */
  jsonLine(value: unknown): void {
    this.#streams.stdout.write(`${JSON.stringify(value, keepUnknown)}\n`);
  }

  /** A note on stderr (never part of the result). */
  note(text: string): void {
    this.#streams.stderr.write(`${text}\n`);
  }

  /**
   * Progress over `total` items: a bar redrawn in place on a terminal, plain lines at every
   * tenth otherwise (a log file or CI keeps a readable record), nothing with `--no-progress`.
   */
  progress(label: string, total: number): Progress {
    if (!this.#progress || total === 0) return { advance() {}, done() {} };
    const stderr = this.#streams.stderr;
    return stderr.isTTY === true
      ? new BarProgress(stderr, label, total)
      : new LineProgress(stderr, label, total);
  }
}

/** `undefined` as `null`: a script finds every documented key, with or without a value. */
function keepUnknown(_key: string, value: unknown): unknown {
  return value === undefined ? null : value;
}

/** Plain lines at each tenth of the work: `check: 3000/10000 (30%)`. */
class LineProgress implements Progress {
  #count = 0;
  #tenth = 0;
  readonly stream: CliStreams['stderr'];
  readonly label: string;
  readonly total: number;

  constructor(stream: CliStreams['stderr'], label: string, total: number) {
    this.stream = stream;
    this.label = label;
    this.total = total;
  }

  advance(count = 1): void {
    this.#count += count;
    const tenth = Math.floor((this.#count * 10) / this.total);
    if (tenth <= this.#tenth || tenth >= 10) return;
    this.#tenth = tenth;
    this.stream.write(`${this.label}: ${this.#count}/${this.total} (${tenth * 10}%)\n`);
  }

  done(): void {
    this.stream.write(`${this.label}: ${this.total}/${this.total} (100%)\n`);
  }
}

/** A bar redrawn on one terminal line, cleared when done. */
class BarProgress implements Progress {
  #count = 0;
  #drawn = -1;
  readonly stream: CliStreams['stderr'];
  readonly label: string;
  readonly total: number;

  constructor(stream: CliStreams['stderr'], label: string, total: number) {
    this.stream = stream;
    this.label = label;
    this.total = total;
  }

  advance(count = 1): void {
    this.#count = Math.min(this.total, this.#count + count);
    const percent = Math.floor((this.#count * 100) / this.total);
    if (percent === this.#drawn) return;
    this.#drawn = percent;
    const width = Math.max(10, Math.min(40, (this.stream.columns ?? 80) - 40));
    const filled = Math.round((width * this.#count) / this.total);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    this.stream.write(`\r${this.label} ${bar} ${percent}% ${this.#count}/${this.total}`);
  }

  done(): void {
    this.stream.write('\r\x1b[2K');
  }
}
