import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { factsOfType } from '../../events/facts.ts';
import { planRecovery } from '../../events/plan-recovery.ts';
import {
  type ChildResult,
  type Execution,
  formatLog,
  type KillRule,
  printedHistory,
  readExecutions,
  readLog,
  readRequestCount,
  runChild,
  seededRandom,
} from './crash-harness.ts';
import { crashViolations, finalViolations } from './crash-invariants.ts';
import type { ChildOptions } from './crash-scenario.ts';

/**
 * Issue 7's crash campaign, one episode at a time: run the scenario in a child, SIGKILL it at a
 * random moment, check the log, restart with `recover()`, and so on until a child finishes the
 * run. The kill schedule comes from the episode's seed only, so a seed replays it.
 */

/** Facts that mark progress through the scenario: 4 steps completed, 5 calls settled, the end. */
const milestoneTypes = new Set(['step.completed', 'tool.settled', 'run.ended']);
const milestones = 10;
/** About how many lines a child prints per milestone (46 lines for a whole run). */
const linesPerMilestone = 4.6;
/** Kills land up to this many milliseconds after the chosen line: mid-tool, mid-stream. */
const maxJitterMs = 6;

/** One kill: where it was aimed and where the log says it landed. */
export interface Kill {
  mode: ChildOptions['mode'];
  /** The child was killed this long after its `line`-th line after `ready` (0: at `ready`). */
  line: number;
  jitterMs: number;
  /** The state the log's unfinished run was left in, or `before run.started` / `after run.ended`. */
  landed: string;
}

export interface EpisodeReport {
  index: number;
  seed: number;
  kills: Kill[];
  /** Children started, the finishing one included. */
  children: number;
}

/** The seed of episode `index` of a campaign seeded `seed`. */
export function episodeSeed(seed: number, index: number): number {
  return (seed + Math.imul(index + 1, 0x9e3779b9)) >>> 0;
}

/** A violation found in an episode, with everything needed to replay and inspect it. */
export class CampaignFailure extends Error {
  constructor(options: {
    seed: number;
    episode: number;
    after: string;
    problems: string[];
    log: string;
    executions: Execution[];
    dir: string;
    /** The command that replays it (default: the crash campaign's). */
    replay?: string;
  }) {
    super(
      `crash campaign seed ${options.seed}, episode ${options.episode}, ${options.after}:\n` +
        `${options.problems.map((problem) => `  - ${problem}`).join('\n')}\n` +
        `replay: ${options.replay ?? `TURNLOG_CRASH_SEED=${options.seed} TURNLOG_CRASH_EPISODE=${options.episode} npx vitest run test/crash/crash-campaign.test.ts`}\n` +
        `log:\n${options.log}\n` +
        `executions: ${options.executions.map((execution) => `${execution.callId}@${execution.pid}`).join(' ')}\n` +
        `store kept in ${options.dir}`,
    );
    this.name = 'CampaignFailure';
  }
}

/**
 * Kills after the `line`-th line following `ready` (0: at `ready`), `jitterMs` later, unless the
 * run ends first: a child whose run ended is left to finish (nothing is happening any more).
 */
export function killAfter(line: number, jitterMs: number): KillRule {
  let afterReady: number | undefined;
  let runEnded = false;
  return (text) => {
    if (/^fact \d+ run\.ended /.test(text)) runEnded = true;
    if (text === 'ready') afterReady = 0;
    else if (afterReady !== undefined) afterReady += 1;
    return afterReady === line && !runEnded ? jitterMs : undefined;
  };
}

/** Where a kill left the log, as `planRecovery` reads it. */
export function landing(facts: Awaited<ReturnType<typeof readLog>>, child: ChildResult): string {
  if (facts.length === 0) return 'before run.started';
  const run = planRecovery(facts).runs[0];
  if (run === undefined) return 'after run.ended';
  const recovering =
    child.lines.includes('ready') && !child.lines.some((line) => line.startsWith('recovered '));
  const where = run.interruptedIn ?? '-';
  if (recovering && !child.lines.some((line) => line.startsWith('fact '))) {
    return `${where} (in recover())`;
  }
  return run.indeterminate.length > 0 ? `${where} (tool running)` : where;
}

/**
 * Runs one episode in `root/episode-<index>`: kill → check → restart until a child finishes,
 * at most `maxKills` kills. Throws `CampaignFailure` at the first violation.
 */
export async function runEpisode(options: {
  root: string;
  seed: number;
  index: number;
  maxKills: number;
  /** How long one child may run before it is called hung (default 30 s; scaled under load). */
  childTimeoutMs?: number;
}): Promise<EpisodeReport> {
  const seed = episodeSeed(options.seed, options.index);
  const random = seededRandom(seed);
  const folder = path.join(options.root, `episode-${options.index}`);
  mkdirSync(folder, { recursive: true });
  const base = {
    dir: path.join(folder, 'store'),
    sessionId: 'campaign',
    sideFile: path.join(folder, 'executions.log'),
    requestFile: path.join(folder, 'requests.log'),
    markerFile: path.join(folder, 'failed-once'),
    toolMs: 8,
    chunkMs: 1,
    retryAfterMs: 4,
  };
  const kills: Kill[] = [];
  const fail = (after: string, problems: string[], facts: Parameters<typeof formatLog>[0]) =>
    new CampaignFailure({
      seed: options.seed,
      episode: options.index,
      after,
      problems,
      log: formatLog(facts),
      executions: readExecutions(base.sideFile),
      dir: folder,
    });

  for (let children = 1; ; children += 1) {
    const before = await readLog(base.dir, base.sessionId);
    const mode = factsOfType(before, 'run.started').length > 0 ? 'recover' : 'start';
    // Aim anywhere in what is left of the run, so kills land while something is happening;
    // squaring favours the near part, so an episode takes several kills before it finishes.
    const reached = before.filter((fact) => milestoneTypes.has(fact.type)).length;
    const remaining = Math.max(3, Math.round((milestones - reached) * linesPerMilestone));
    const line = Math.floor(random() ** 2 * (remaining + 1));
    const jitterMs = Math.floor(random() * maxJitterMs);
    // Once run.ended is durable a child only reads the log: killing it tests nothing.
    const ended = factsOfType(before, 'run.ended').length > 0;
    const killing = kills.length < options.maxKills && !ended;
    const child = await runChild(
      { ...base, mode },
      killing ? killAfter(line, jitterMs) : undefined,
      options.childTimeoutMs,
    );
    const facts = await readLog(base.dir, base.sessionId);
    const executions = readExecutions(base.sideFile);
    const requests = readRequestCount(base.requestFile);
    if (!child.killed) {
      const after = `its finishing child (${children} children, ${kills.length} kills)`;
      if (child.code !== 0)
        throw fail(after, [`child exited ${child.code}: ${child.stderr}`], facts);
      const problems = finalViolations(facts, executions, requests, printedHistory(child));
      const [ended] = factsOfType(facts, 'run.ended');
      if (ended?.status !== 'completed') problems.push(`the run ended ${ended?.status}`);
      if (problems.length > 0) throw fail(after, problems, facts);
      return { index: options.index, seed, kills, children };
    }
    kills.push({ mode, line, jitterMs, landed: landing(facts, child) });
    const problems = crashViolations(facts, executions, requests);
    if (problems.length > 0) {
      throw fail(
        `kill ${kills.length} (${mode} child, line ${line} +${jitterMs} ms)`,
        problems,
        facts,
      );
    }
  }
}
