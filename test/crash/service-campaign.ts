import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { factsOfType } from '../../events/facts.ts';
import { CampaignFailure, episodeSeed, type Kill, killAfter, landing } from './crash-campaign.ts';
import {
  formatLog,
  type KillRule,
  printedHistory,
  readLog,
  readRequestCount,
  runChild,
  seededRandom,
} from './crash-harness.ts';
import { crashViolations, finalViolations } from './crash-invariants.ts';
import {
  type LedgerEntry,
  ledgerExecutions,
  readLedger,
  type ServiceChildOptions,
  type ServiceFigures,
  serviceFigures,
  servicePlan,
  serviceViolations,
} from './service-scenario.ts';

/**
 * The service campaign in one process (issue 24, evidence): one run per episode, in
 * test/crash/agent-child.ts on a lowdbStore, with the service scenario's tools and model; the
 * child is SIGKILLed at a seeded line of its output and restarted with `recover()` until a child
 * finishes the run (the crash campaign's schedule, crash-campaign.ts). The external service runs
 * in a process of its own for the whole campaign and is never killed: its ledger is the truth
 * about what took effect. After each kill the log passes the crash invariants, with the ledger's
 * effects as the executions; at the end, the final invariants and the figures
 * (`serviceViolations`).
 */

export interface ServiceEpisodeReport {
  index: number;
  seed: number;
  kills: Kill[];
  children: number;
  figures: ServiceFigures;
}

/** About how many lines a child prints per milestone (a step completed, a call settled, the end). */
const linesPerMilestone = 4;
const maxJitterMs = 6;

export async function runServiceEpisode(options: {
  root: string;
  seed: number;
  index: number;
  maxKills: number;
  serviceUrl: string;
  ledgerFile: string;
  childTimeoutMs?: number;
  /** Instead of the seeded schedule, the first child is killed by this rule (and only it). */
  firstKill?: (plan: ReturnType<typeof servicePlan>) => KillRule;
  plantBlindReconcile?: boolean;
}): Promise<ServiceEpisodeReport> {
  const seed = episodeSeed(options.seed, options.index);
  const random = seededRandom(seed);
  const plan = servicePlan(seed);
  const folder = path.join(options.root, `episode-${options.index}`);
  mkdirSync(folder, { recursive: true });
  const requestFile = path.join(folder, 'requests.log');
  const base: Omit<ServiceChildOptions, 'mode'> = {
    dir: path.join(folder, 'store'),
    sessionId: `e${options.index}`,
    sideFile: path.join(folder, 'unused.log'),
    requestFile,
    markerFile: path.join(folder, 'unused-marker'),
    toolMs: 8,
    chunkMs: 1,
    retryAfterMs: 4,
    service: {
      url: options.serviceUrl,
      toolMs: 8,
      chunkMs: 1,
      requestFile,
      seed,
      ...(options.plantBlindReconcile === true && { plantBlindReconcile: true }),
    },
  };
  const ledger = (): LedgerEntry[] =>
    readLedger(options.ledgerFile).filter((entry) => entry.sessionId === base.sessionId);
  const kills: Kill[] = [];
  const fail = (after: string, problems: string[], facts: Parameters<typeof formatLog>[0]) =>
    new CampaignFailure({
      seed: options.seed,
      episode: options.index,
      after,
      problems,
      log: formatLog(facts),
      executions: ledgerExecutions(ledger()),
      dir: folder,
      replay: `TURNLOG_SERVICE_SEED=${options.seed} TURNLOG_SERVICE_EPISODE=${options.index} npx vitest run test/crash/service-campaign.test.ts`,
    });
  // Milestones: each step completed (the plan's and the final answer), each call settled, the end.
  const milestones = plan.length + 1 + plan.flat().length + 1;

  for (let children = 1; ; children += 1) {
    const before = await readLog(base.dir, base.sessionId);
    const mode = factsOfType(before, 'run.started').length > 0 ? 'recover' : 'start';
    const reached = before.filter((fact) =>
      ['step.completed', 'tool.settled', 'run.ended'].includes(fact.type),
    ).length;
    const remaining = Math.max(3, Math.round((milestones - reached) * linesPerMilestone));
    const line = Math.floor(random() ** 2 * (remaining + 1));
    const jitterMs = Math.floor(random() * maxJitterMs);
    const ended = factsOfType(before, 'run.ended').length > 0;
    const killing = kills.length < options.maxKills && !ended;
    const rule =
      options.firstKill === undefined
        ? killing
          ? killAfter(line, jitterMs)
          : undefined
        : children === 1
          ? options.firstKill(plan)
          : undefined;
    const child = await runChild({ ...base, mode }, rule, options.childTimeoutMs);
    const facts = await readLog(base.dir, base.sessionId);
    const executions = ledgerExecutions(ledger());
    const requests = readRequestCount(requestFile);
    if (!child.killed) {
      const after = `its finishing child (${children} children, ${kills.length} kills)`;
      if (child.code !== 0)
        throw fail(after, [`child exited ${child.code}: ${child.stderr}`], facts);
      const figures = serviceFigures(facts, ledger());
      const problems = [
        ...finalViolations(facts, executions, requests, printedHistory(child)),
        ...serviceViolations(figures),
      ];
      const [end] = factsOfType(facts, 'run.ended');
      if (end?.status !== 'completed') problems.push(`the run ended ${end?.status}`);
      if (problems.length > 0) throw fail(after, problems, facts);
      return { index: options.index, seed, kills, children, figures };
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
