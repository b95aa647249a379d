import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Fact, factsOfType } from '../../events/facts.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { postgresStore } from '../../store/postgres/postgres-store.ts';
import { formatLog, seededRandom } from './crash-harness.ts';
import {
  addFigures,
  emptyFigures,
  ledgerExecutions,
  readLedger,
  type ServiceFigures,
  serviceFigures,
  serviceUserText,
  serviceViolations,
} from './service-scenario.ts';
import {
  type LeaseGrant,
  leaseAuditSql,
  type WorkerExecution,
  workersFinalViolations,
} from './workers-invariants.ts';
import { userTextOf, type Variant, type WorkerChildOptions } from './workers-scenario.ts';

/**
 * Issue 13's crash campaign across workers: `workers` child processes (test/crash/workers-child.ts),
 * each a runtime on one postgresStore schema, drive `runs` runs while the parent SIGKILLs,
 * SIGSTOPs and SIGCONTs them, paced by the runs' progress (`faultEverySteps`), and restarts
 * killed ones. The parent starts every
 * run on a random worker, answers every pending decision (permission asks, indeterminate calls)
 * on a random worker other than the run's last driver, and checks each session's log at the end
 * against the single-process invariants and the lease audit (workers-invariants.ts).
 */

const childFile = fileURLToPath(new URL('./workers-child.ts', import.meta.url));
const compileCache = path.join(tmpdir(), 'turnlog-crash-compile-cache');

export interface WorkersCampaignOptions {
  seed: number;
  runs: number;
  workers: number;
  leaseMs: number;
  connectionString: string;
  schema: string;
  /** Side files go here: one execution file and one request file per child process. */
  root: string;
  /** Runs in flight at once. */
  concurrency: number;
  /** Give up (and report what is unfinished) after this long. */
  deadlineMs: number;
  toolMs?: number;
  chunkMs?: number;
  /**
   * The chaos is paced by progress, not by the clock: one fault (a SIGKILL or a SIGSTOP) after
   * every `faultEverySteps` `step.completed` facts the parent observed in the store, on average
   * (each gap seeded, 0.5–1.5 × it; default 16, about one fault per 5 runs), at most `maxFaults`
   * in all (default: one per `faultEverySteps` of three steps per run). Paced by the clock, fast
   * runs met only a few faults (200 runs in 9 s met 1–4 kills).
   */
  faultEverySteps?: number;
  maxFaults?: number;
  /** Plants a bug in every worker (`WorkerChildOptions.plantDoubleExecution`). */
  plantDoubleExecution?: boolean;
  /** Progress lines, for long runs. */
  log?: (line: string) => void;
  /**
   * How much slower the machine is than the quiet one (test/helpers/calibration.ts), default 1:
   * the end's waits (handles following their runs, workers exiting on close) and the workers'
   * store timeouts scale with it.
   */
  slowdown?: number;
  /**
   * Run the service scenario instead (test/crash/service-scenario.ts): the workers' tools call
   * the external service at `url`; its ledger, not side files, says what was executed; the
   * issue-24 figures are checked per run. Chaos is SIGKILL only: a SIGSTOPped worker that wakes
   * after its run was taken over can still send a request its tool had begun (see
   * architecture/crash-testing.md).
   */
  service?: { url: string; ledgerFile: string; plantBlindReconcile?: boolean };
}

export interface WorkersCampaignReport {
  seed: number;
  runs: number;
  elapsedMs: number;
  /** Worker processes started, restarts included. */
  processes: number;
  kills: number;
  /** `step.completed` facts the parent observed while the campaign ran: what paces the chaos. */
  stepsCompleted: number;
  /** Faults that were due (by progress) but not done when the last run ended. */
  faultsNotDone: number;
  /** Workers that exited by themselves (each a violation), restarted to keep the campaign going. */
  selfExits: number;
  restartsNewId: number;
  restartsSameId: number;
  /** SIGSTOPs shorter than a third of the lease (no lease should be lost). */
  shortStops: number;
  /** SIGSTOPs longer than the lease (its runs are taken over; it wakes up fenced out). */
  longStops: number;
  executions: number;
  requests: number;
  grants: number;
  /** Grants of a lease another worker held (expired or handed over): takeovers. */
  takeovers: number;
  indeterminate: number;
  recovered: number;
  decisions: number;
  /** Decide commands sent (retries of an unanswered one included). */
  decideCommands: number;
  busyProbes: number;
  /** Errors the commands met, by name (only the expected ones are allowed). */
  commandErrors: Record<string, number>;
  facts: number;
  /** The service scenario's figures, summed over its runs. */
  figures?: ServiceFigures;
  violations: string[];
}

type WorkerState = 'running' | 'stopped' | 'dead' | 'closed';

interface CommandResult {
  ok: boolean;
  /** Error name (`err`), or `exited` when the process died before answering. */
  error?: string;
  message?: string;
}

/** One worker process: commands on stdin, lines on stdout. */
class WorkerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  state: WorkerState = 'running';
  /** The campaign SIGKILLed it. */
  killed = false;
  readonly lines: string[] = [];
  stderr = '';
  readonly done = new Map<string, string>();
  /** Sessions this process gave out a handle for (send resolved). */
  readonly handles = new Set<string>();
  ready: Promise<void>;
  exited: Promise<void>;
  #nextId = 1;
  readonly #waiting = new Map<number, (result: CommandResult) => void>();

  readonly workerId: string;

  constructor(options: WorkerChildOptions) {
    this.workerId = options.workerId;
    this.child = spawn(process.execPath, [childFile, JSON.stringify(options)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
    });
    let resolveReady: () => void = () => {};
    this.ready = new Promise((resolve) => {
      resolveReady = resolve;
    });
    this.exited = new Promise((resolve) => this.child.on('close', () => resolve()));
    this.child.stdin.on('error', () => {});
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    let buffered = '';
    this.child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) this.#line(line, resolveReady);
    });
    this.child.on('close', () => {
      if (this.state !== 'closed') this.state = 'dead';
      resolveReady();
      for (const resolve of this.#waiting.values()) resolve({ ok: false, error: 'exited' });
      this.#waiting.clear();
    });
  }

  #line(line: string, resolveReady: () => void): void {
    this.lines.push(line);
    if (this.lines.length > 300) this.lines.shift();
    const [kind = '', first = '', second = '', ...rest] = line.split(' ');
    if (kind === 'ready') resolveReady();
    if (kind === 'ok' || kind === 'err') {
      const resolve = this.#waiting.get(Number(first));
      this.#waiting.delete(Number(first));
      resolve?.(
        kind === 'ok' ? { ok: true } : { ok: false, error: second, message: rest.join(' ') },
      );
    }
    if (kind === 'done' || kind === 'donefail') this.done.set(first, line);
  }

  command(command: Record<string, unknown>): Promise<CommandResult> {
    if (this.state === 'dead' || this.state === 'closed') {
      return Promise.resolve({ ok: false, error: 'exited' });
    }
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  signal(signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void {
    if (this.state === 'dead' || this.state === 'closed') return;
    this.child.kill(signal);
    if (signal === 'SIGSTOP') this.state = 'stopped';
    if (signal === 'SIGCONT') this.state = 'running';
    if (signal === 'SIGKILL') {
      this.state = 'dead';
      this.killed = true;
    }
  }
}

interface SessionState {
  sessionId: string;
  variant: Variant;
  /** The user text that starts its run. */
  text: string;
  facts: Fact[];
  /** The send that started it is in flight or resolved. */
  sentTo: WorkerProcess | undefined;
  sendAttempts: number;
  lastSendAt: number;
  /** The last send was refused in a way that says the run did not start. */
  sendFailed: boolean;
  ended: boolean;
  /** Decisions sent per `callId:kind`: when, to whom, what. */
  decided: Map<string, { at: number; to: WorkerProcess; answered: boolean; decision: string }>;
  /** When the parent may answer each pending `callId:kind` (a seeded delay after it first saw it). */
  seenPending: Map<string, number>;
  probe: boolean;
  /** A busy probe is in flight: decisions wait for it. */
  probing: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A session's state before its run is sent. */
function sessionStart(probe: boolean): Omit<SessionState, 'sessionId' | 'variant' | 'text'> {
  return {
    facts: [],
    sentTo: undefined,
    sendAttempts: 0,
    lastSendAt: 0,
    sendFailed: false,
    ended: false,
    decided: new Map(),
    seenPending: new Map(),
    probe,
    probing: false,
  };
}

/**
 * Errors a retried decision may meet when its first attempt was made already: the run ended
 * (`NoActiveRunError`), the call is no longer pending (`UnknownDecisionError`), or the allowed
 * call started and its worker died, so it is indeterminate now and takes no `allow`
 * (`InvalidDecisionError`, as with one process). Only a retry may meet them.
 */
const expectedErrors = new Set([
  'NoActiveRunError',
  'UnknownDecisionError',
  'InvalidDecisionError',
  'exited',
]);

export async function runWorkersCampaign(
  options: WorkersCampaignOptions,
): Promise<WorkersCampaignReport> {
  const began = performance.now();
  const log = options.log ?? (() => {});
  const toolMs = options.toolMs ?? 40;
  const chunkMs = options.chunkMs ?? 3;
  const faultEverySteps = options.faultEverySteps ?? 16;
  const maxFaults = options.maxFaults ?? Math.ceil((options.runs * 3) / faultEverySteps);
  const { leaseMs, seed } = options;
  mkdirSync(options.root, { recursive: true });

  // The store creates its tables on first use; then the audit trigger goes on `leases`.
  const store = postgresStore({
    connectionString: options.connectionString,
    schema: options.schema,
  });
  await store.sessions();
  const pool = new pg.Pool({ connectionString: options.connectionString, max: 3 });
  for (const statement of leaseAuditSql(options.schema)) await pool.query(statement);

  // Separate streams, so one kind of choice does not shift the others.
  const setupRandom = seededRandom(seed);
  const chaosRandom = seededRandom((seed ^ 0x5bd1e995) >>> 0);
  const pickRandom = seededRandom((seed ^ 0x27d4eb2f) >>> 0);
  const decisionRandom = seededRandom((seed ^ 0x165667b1) >>> 0);
  const pick = <T>(items: readonly T[]): T | undefined =>
    items[Math.floor(pickRandom() * items.length)];

  const report: WorkersCampaignReport = {
    seed,
    runs: options.runs,
    elapsedMs: 0,
    processes: 0,
    kills: 0,
    stepsCompleted: 0,
    faultsNotDone: 0,
    selfExits: 0,
    restartsNewId: 0,
    restartsSameId: 0,
    shortStops: 0,
    longStops: 0,
    executions: 0,
    requests: 0,
    grants: 0,
    takeovers: 0,
    indeterminate: 0,
    recovered: 0,
    decisions: 0,
    decideCommands: 0,
    busyProbes: 0,
    commandErrors: {},
    facts: 0,
    violations: [],
  };
  const violations = report.violations;
  const countError = (name: string) => {
    report.commandErrors[name] = (report.commandErrors[name] ?? 0) + 1;
  };

  const sessions: SessionState[] = Array.from({ length: options.runs }, (_, index) => {
    const sessionId = `s${String(index).padStart(4, '0')}`;
    const variant: Variant = setupRandom() < 0.6 ? 'ask' : 'plain';
    const text =
      options.service === undefined
        ? userTextOf(sessionId, variant)
        : serviceUserText(sessionId, Math.floor(setupRandom() * 2 ** 31));
    return { sessionId, variant, text, ...sessionStart(setupRandom() < 0.25) };
  });
  const bySession = new Map(sessions.map((session) => [session.sessionId, session]));

  // Worker slots: slot i starts as `w<i>`; a restart gets `w<i>.<n>` or (sometimes) the same id.
  let processCount = 0;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, action: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, ms);
    timers.add(timer);
  };
  let chaosOn = true;
  const slots: WorkerProcess[] = [];
  const everyProcess: WorkerProcess[] = [];
  const start = (workerId: string, recoverAtStart: boolean, slotIndex: number): WorkerProcess => {
    processCount += 1;
    const worker = new WorkerProcess({
      connectionString: options.connectionString,
      schema: options.schema,
      workerId,
      leaseMs,
      sideFile: path.join(options.root, `exec-${processCount}.log`),
      requestFile: path.join(options.root, `requests-${processCount}.log`),
      toolMs,
      chunkMs,
      recoverAtStart,
      ...(options.slowdown !== undefined && { slowdown: options.slowdown }),
      ...(options.plantDoubleExecution === true && { plantDoubleExecution: true }),
      ...(options.service !== undefined && {
        service: {
          url: options.service.url,
          ...(options.service.plantBlindReconcile === true && { plantBlindReconcile: true }),
        },
      }),
    });
    everyProcess.push(worker);
    // A worker that dies by itself is a violation (reported at the end); its slot is restarted
    // so the campaign goes on with all its workers.
    void worker.exited.then(() => {
      if (worker.killed || worker.state === 'closed' || !chaosOn) return;
      if (slots[slotIndex] !== worker) return;
      report.selfExits += 1;
      later(200, () => {
        if (chaosOn && slots[slotIndex] === worker) {
          slots[slotIndex] = start(`w${slotIndex + 1}.x${report.selfExits}`, true, slotIndex);
        }
      });
    });
    return worker;
  };
  for (let slot = 0; slot < options.workers; slot += 1) {
    slots.push(start(`w${slot + 1}`, false, slot));
  }
  await Promise.all(slots.map((worker) => worker.ready));

  const runningWorkers = () => slots.filter((worker) => worker.state === 'running');
  /** A running worker, other than `avoid` when there is another. */
  const someWorker = (avoid?: string) => {
    const running = runningWorkers();
    const others = running.filter((worker) => worker.workerId !== avoid);
    return pick(others.length > 0 ? others : running);
  };

  // --- chaos -------------------------------------------------------------------------------
  const restartGeneration = new Map<number, number>();
  // Paced by progress: a fault is due once the parent has observed enough `step.completed` facts
  // (`stepsCompleted`, counted by `poll`), so the faults per run stay the same however fast the
  // runs are; only the pauses (fractions of the lease) and the restart delays are times. The first
  // faults are one of each kind, then the seeded rolls: a kill first, restarted under a new id.
  let stepsCompleted = 0;
  let faults = 0;
  const nextGap = () => Math.max(1, Math.round(faultEverySteps * (0.5 + chaosRandom())));
  let faultDueAt = nextGap();
  /** Faults due now (those after the next counted at the mean gap). */
  const faultsDue = () => {
    let due = 0;
    for (let at = faultDueAt; at <= stepsCompleted && faults + due < maxFaults; due += 1) {
      at += faultEverySteps;
    }
    return due;
  };
  const firstRolls = options.service !== undefined ? [0] : [0, 0.9, 0.6];
  /** Does the fault that is due, if one is, on a running worker (never the last one running). */
  const chaosStep = () => {
    if (!chaosOn || faults >= maxFaults || stepsCompleted < faultDueAt) return;
    const running = runningWorkers();
    if (running.length < 2) return;
    faults += 1;
    faultDueAt += nextGap();
    const target = running[Math.floor(chaosRandom() * running.length)] as WorkerProcess;
    const slotIndex = slots.indexOf(target);
    const delayRoll = chaosRandom();
    const sameIdRoll = chaosRandom();
    const recoverRoll = chaosRandom();
    const roll = firstRolls.shift() ?? chaosRandom();
    // The service scenario kills only (its options say why).
    if (roll < 0.5 || options.service !== undefined) {
      const first = report.kills === 0;
      target.signal('SIGKILL');
      report.kills += 1;
      const restartIn = Math.round(150 + delayRoll * 1000);
      later(restartIn, () => {
        const generation = (restartGeneration.get(slotIndex) ?? 0) + 1;
        restartGeneration.set(slotIndex, generation);
        const sameId = sameIdRoll < 0.25 && !first;
        if (sameId) report.restartsSameId += 1;
        else report.restartsNewId += 1;
        const id = sameId ? target.workerId : `w${slotIndex + 1}.${generation}`;
        slots[slotIndex] = start(id, recoverRoll < 0.5, slotIndex);
      });
    } else if (roll < 0.75) {
      target.signal('SIGSTOP');
      report.shortStops += 1;
      later(Math.round(leaseMs * (0.05 + delayRoll * 0.2)), () => target.signal('SIGCONT'));
    } else {
      target.signal('SIGSTOP');
      report.longStops += 1;
      later(Math.round(leaseMs * (1.3 + delayRoll * 1.7)), () => target.signal('SIGCONT'));
    }
  };

  // --- the parent's view of the logs -------------------------------------------------------
  const schemaSql = `"${options.schema}"`;
  const poll = async () => {
    const open = sessions.filter((session) => session.sentTo !== undefined && !session.ended);
    if (open.length === 0) return;
    const { rows } = await pool.query(
      `SELECT f.session_id, f.body::text AS body FROM ${schemaSql}.facts f
       JOIN unnest($1::text[], $2::int[]) AS k(session_id, seq)
         ON f.session_id = k.session_id AND f.seq > k.seq
       ORDER BY f.session_id, f.seq`,
      [open.map((session) => session.sessionId), open.map((session) => session.facts.length)],
    );
    for (const row of rows) {
      const session = bySession.get(String(row.session_id));
      const fact = JSON.parse(String(row.body)) as Fact;
      if (session === undefined || fact.seq !== session.facts.length + 1) continue;
      session.facts.push(fact);
      if (fact.type === 'step.completed') stepsCompleted += 1;
      if (fact.type === 'run.ended') session.ended = true;
    }
  };

  const send = (session: SessionState, worker: WorkerProcess) => {
    session.sentTo = worker;
    session.sendFailed = false;
    session.sendAttempts += 1;
    session.lastSendAt = performance.now();
    void worker
      .command({
        op: 'send',
        sessionId: session.sessionId,
        text: session.text,
      })
      .then((result) => {
        if (result.ok) {
          worker.handles.add(session.sessionId);
          return;
        }
        countError(`send:${result.error}`);
        // A resend finds the run its first attempt started: busy is the expected answer then.
        // A worker paused between taking the new run's lease and appending run.started finds the
        // lease gone (LeaseLostError): the run never started, so it is sent again.
        if (result.error === 'LeaseLostError') session.sendFailed = true;
        else if (result.error !== 'exited' && result.error !== 'SessionBusyError') {
          violations.push(
            `send ${session.sessionId} on ${worker.workerId}: ${result.error} ${result.message}`,
          );
        }
      });
  };

  // The run waits for a decision the parent holds back until the probe answered, so the run
  // cannot end (and a second send legitimately start a new one) before the probe's send ran.
  const probeBusy = (session: SessionState, driver: string | undefined) => {
    const worker = someWorker(driver);
    if (worker === undefined) return;
    report.busyProbes += 1;
    session.probing = true;
    void worker
      .command({ op: 'send', sessionId: session.sessionId, text: 'a second run' })
      .then((result) => {
        session.probing = false;
        if (result.ok) {
          violations.push(
            `send on ${worker.workerId} to ${session.sessionId}, parked with a pending decision, started a second run instead of SessionBusyError`,
          );
        } else if (result.error !== 'SessionBusyError' && result.error !== 'exited') {
          violations.push(
            `send on ${worker.workerId} to busy ${session.sessionId}: ${result.error} ${result.message}, expected SessionBusyError`,
          );
        }
      });
  };

  let closing = false;
  const decide = (session: SessionState, callId: string, kind: string, driver?: string) => {
    const worker = someWorker(driver);
    if (worker === undefined) return;
    // Keyed by kind too: an allowed call that started and lost its worker asks again, as indeterminate.
    const key = `${callId}:${kind}`;
    const previous = session.decided.get(key);
    const decision =
      kind === 'indeterminate' ? 'report-unknown' : decisionRandom() < 0.8 ? 'allow' : 'deny';
    // A retry repeats the first decision (a decision cannot change once in the log).
    const chosen = previous?.decision ?? decision;
    const entry = { at: performance.now(), to: worker, answered: false, decision: chosen };
    session.decided.set(key, entry);
    report.decideCommands += 1;
    void worker
      .command({ op: 'decide', sessionId: session.sessionId, callId, decision: chosen })
      .then((result) => {
        entry.answered = true;
        if (result.ok) return;
        countError(`decide:${result.error}`);
        // A repeat, or an attempt a later one superseded (its worker was paused, and ran it late).
        const retry = previous !== undefined || session.decided.get(key) !== entry;
        // A request still waiting when the end closes its worker is refused by the close.
        const closedAtEnd = closing && result.error === 'RuntimeClosedError';
        if (
          !(retry && expectedErrors.has(result.error ?? '')) &&
          result.error !== 'exited' &&
          !closedAtEnd
        ) {
          violations.push(
            `decide ${chosen} ${session.sessionId}/${callId} on ${worker.workerId}: ${result.error} ${result.message}`,
          );
        }
      });
  };

  // --- the main loop -----------------------------------------------------------------------
  let nextToSend = 0;
  const deadline = performance.now() + options.deadlineMs;
  let lastProgress = 0;
  while (true) {
    await poll();
    const now = performance.now();
    const ended = sessions.filter((session) => session.ended).length;
    if (ended === sessions.length) break;
    if (now > deadline) {
      const unfinished = sessions.filter((session) => !session.ended);
      violations.push(
        `deadline: ${unfinished.length} runs unfinished after ${options.deadlineMs} ms: ${unfinished
          .slice(0, 5)
          .map(
            (session) =>
              `${session.sessionId} (sent to ${session.sentTo?.workerId ?? 'nobody'} ×${session.sendAttempts}):\n${formatLog(session.facts)}`,
          )
          .join('\n')}`,
      );
      break;
    }
    if (now - lastProgress > 5000) {
      lastProgress = now;
      log(
        `${ended}/${sessions.length} ended, ${report.kills} kills, ${report.shortStops + report.longStops} stops, workers ${slots.map((worker) => `${worker.workerId}:${worker.state}`).join(' ')}`,
      );
    }
    chaosStep();
    // Start runs up to the concurrency, unless faults fell behind (too few workers running to
    // take one): new runs then wait, so the faults per run stay what `faultEverySteps` says.
    const inFlight = sessions.filter((session) => session.sentTo !== undefined && !session.ended);
    if (inFlight.length < options.concurrency && nextToSend < sessions.length && faultsDue() < 2) {
      const worker = someWorker();
      const session = sessions[nextToSend];
      if (worker !== undefined && session !== undefined) {
        nextToSend += 1;
        send(session, worker);
      }
    }
    for (const session of inFlight) {
      // A send whose worker was killed before the run started: start it again elsewhere. Never
      // when it was only stopped: it would run the queued send after SIGCONT, a second run.
      if (
        session.facts.length === 0 &&
        session.sentTo !== undefined &&
        (session.sendFailed ||
          (session.sentTo.state === 'dead' && now - session.lastSendAt > leaseMs * 2))
      ) {
        const worker = someWorker(session.sentTo.workerId);
        if (worker !== undefined) send(session, worker);
        continue;
      }
      if (session.facts.length === 0) continue;
      const driver = session.facts.at(-1)?.workerId;
      for (const pending of projectTurn(session.facts).pending) {
        const seen = session.seenPending.get(`${pending.callId}:${pending.kind}`);
        if (seen === undefined) {
          // Answer after a seeded delay: sometimes while the run is still parking.
          session.seenPending.set(
            `${pending.callId}:${pending.kind}`,
            now + decisionRandom() * 120,
          );
          if (session.probe && pending.kind === 'permission') {
            session.probe = false;
            probeBusy(session, driver);
          }
          continue;
        }
        if (now < seen || session.probing) continue;
        const sent = session.decided.get(`${pending.callId}:${pending.kind}`);
        const stale =
          sent !== undefined &&
          now - sent.at > leaseMs * 2 &&
          (sent.answered || sent.to.state !== 'running');
        if (sent === undefined || stale) decide(session, pending.callId, pending.kind, driver);
      }
    }
    await sleep(20);
  }

  // --- the end: no more chaos; wake and close every worker ---------------------------------
  chaosOn = false;
  report.stepsCompleted = stepsCompleted;
  report.faultsNotDone = faultsDue();
  for (const timer of timers) clearTimeout(timer);
  timers.clear();
  for (const worker of slots) if (worker.state === 'stopped') worker.signal('SIGCONT');
  // Handles given out by workers that were never killed follow their run to its end.
  const slowdown = options.slowdown ?? 1;
  const handleDeadline = performance.now() + 5000 * slowdown;
  const survivors = everyProcess.filter((worker) => worker.state === 'running');
  while (
    performance.now() < handleDeadline &&
    survivors.some((worker) => [...worker.handles].some((id) => !worker.done.has(id)))
  ) {
    await sleep(50);
  }
  for (const worker of survivors) {
    for (const sessionId of worker.handles) {
      const line = worker.done.get(sessionId);
      const endedFact = factsOfType(bySession.get(sessionId)?.facts ?? [], 'run.ended')[0];
      const expected = `done ${sessionId} ${endedFact?.status} ${endedFact?.reason}`;
      if (line !== expected) {
        violations.push(
          `handle: ${worker.workerId}'s turn.done for ${sessionId} ${line === undefined ? 'never settled' : `gave "${line}"`}, the log says "${expected}"`,
        );
      }
    }
  }
  closing = true;
  await Promise.all(
    survivors.map(async (worker) => {
      const closed = worker.command({ op: 'close' });
      const exitMs = Math.round(10_000 * slowdown);
      const timeout = sleep(exitMs).then(() => 'timeout' as const);
      if (
        (await Promise.race([worker.exited.then(() => 'exited' as const), timeout])) === 'timeout'
      ) {
        violations.push(
          `${worker.workerId} did not exit within ${exitMs} ms of close(): ${worker.stderr}`,
        );
        worker.signal('SIGKILL');
      }
      void closed;
      worker.state = 'closed';
    }),
  );
  for (const worker of everyProcess) {
    if (worker.state === 'dead' && !worker.killed) {
      violations.push(`${worker.workerId} exited by itself: ${worker.stderr}`);
    }
  }
  for (const worker of everyProcess) if (worker.state !== 'closed') worker.signal('SIGKILL');
  await Promise.all(everyProcess.map((worker) => worker.exited));

  // --- the final checks --------------------------------------------------------------------
  const executions: WorkerExecution[] = [];
  const requests = new Map<string, number>();
  for (const name of readdirSync(options.root)) {
    const file = path.join(options.root, name);
    if (!existsSync(file)) continue;
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    if (name.startsWith('exec-')) {
      for (const line of lines) {
        const [sessionId = '', callId = '', tool = '', workerId = '', pid = ''] = line.split(' ');
        executions.push({ sessionId, callId, tool, workerId, pid: Number(pid) });
      }
    } else if (name.startsWith('requests-')) {
      for (const line of lines) {
        const sessionId = line.split(' ')[0] ?? '';
        requests.set(sessionId, (requests.get(sessionId) ?? 0) + 1);
      }
    }
  }
  const { rows: grantRows } = await pool.query(
    `SELECT session_id, run_id, worker_id, epoch, last_seq, previous_worker_id
     FROM ${schemaSql}.lease_grants ORDER BY grant_id`,
  );
  const grants: LeaseGrant[] = grantRows.map((row) => ({
    sessionId: String(row.session_id),
    runId: String(row.run_id),
    workerId: String(row.worker_id),
    epoch: Number(row.epoch),
    lastSeq: Number(row.last_seq),
    previousWorkerId: row.previous_worker_id === null ? undefined : String(row.previous_worker_id),
  }));
  // The service scenario's effects are what its ledger holds (its tools keep no side files).
  const ledger =
    options.service === undefined
      ? []
      : readLedger(options.service.ledgerFile).filter((entry) => bySession.has(entry.sessionId));
  executions.push(...ledgerExecutions(ledger));
  if (options.service !== undefined) report.figures = emptyFigures();
  report.grants = grants.length;
  report.takeovers = grants.filter((grant) => grant.previousWorkerId !== undefined).length;
  report.executions = executions.length;
  report.requests = [...requests.values()].reduce((sum, count) => sum + count, 0);
  const knownSessions = new Set(sessions.map((session) => session.sessionId));
  for (const sessionId of await store.sessions()) {
    if (!knownSessions.has(sessionId))
      violations.push(`an unknown session ${sessionId} in the store`);
  }
  for (const session of sessions) {
    // Read through a store, so every fact is checked against the fact schemas again.
    const facts = await store.read(session.sessionId);
    report.facts += facts.length;
    report.indeterminate += factsOfType(facts, 'tool.indeterminate').length;
    report.recovered += factsOfType(facts, 'run.recovered').length;
    report.decisions += factsOfType(facts, 'tool.permission.decided').filter(
      (fact) => fact.by === 'user',
    ).length;
    const runsStarted = factsOfType(facts, 'run.started').length;
    const problems =
      runsStarted === 1 || session.ended
        ? workersFinalViolations({
            facts,
            executions: executions.filter((execution) => execution.sessionId === session.sessionId),
            requests: requests.get(session.sessionId) ?? 0,
            grants: grants.filter((grant) => grant.sessionId === session.sessionId),
          })
        : [];
    if (runsStarted !== 1) problems.push(`${runsStarted} runs started, expected 1`);
    if (report.figures !== undefined) {
      const figures = serviceFigures(
        facts,
        ledger.filter((entry) => entry.sessionId === session.sessionId),
      );
      addFigures(report.figures, figures);
      problems.push(...serviceViolations(figures));
    }
    if (problems.length > 0) {
      violations.push(
        `${session.sessionId}:\n${problems.map((problem) => `  - ${problem}`).join('\n')}\n${formatLog(facts)}\n  executions: ${executions
          .filter((execution) => execution.sessionId === session.sessionId)
          .map((execution) => `${execution.callId}@${execution.workerId}`)
          .join(' ')}`,
      );
    }
  }
  await pool.end();
  await store.close();
  report.processes = processCount;
  report.elapsedMs = performance.now() - began;
  return report;
}

/** The report as a few lines, for the test's output and the docs. */
export function formatWorkersReport(report: WorkersCampaignReport): string {
  const errors = Object.entries(report.commandErrors)
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  return [
    `workers campaign seed ${report.seed}: ${report.runs} runs, ${(report.elapsedMs / 1000).toFixed(1)} s, ${report.processes} worker processes`,
    `  chaos, paced by ${report.stepsCompleted} step.completed facts: ${report.kills} SIGKILLs (restarts: ${report.restartsNewId} new id, ${report.restartsSameId} same id), ${report.shortStops} short + ${report.longStops} long SIGSTOPs, ${report.faultsNotDone} due but not done at the end, ${report.selfExits} workers exited by themselves`,
    `  work: ${report.facts} facts, ${report.executions} executions, ${report.requests} requests, ${report.decisions} decisions (${report.decideCommands} decide commands), ${report.busyProbes} busy probes`,
    `  leases: ${report.grants} grants, ${report.takeovers} takeovers, ${report.indeterminate} indeterminate calls, ${report.recovered} run.recovered`,
    `  command errors: ${errors === '' ? 'none' : errors}`,
    `  violations: ${report.violations.length}`,
  ].join('\n');
}
