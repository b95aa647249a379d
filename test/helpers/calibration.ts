import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';

/**
 * How much slower this machine is right now than the quiet 2-core machine the campaigns' budgets
 * were set on (issue 26, defect 7: at load 9–11 a campaign hit its fixed deadline, and leases of
 * 800 ms lapsed over and over while nothing progressed). Measured, not guessed: the median of
 * three rounds of a fixed piece of CPU work and of starting a Node process (what a campaign does
 * most), each against its time on that machine. At least 1; a campaign multiplies its deadlines,
 * timeouts and leases by it, never its counts: the work it checks stays the same.
 */
export function calibrate(): { slowdown: number; cpuMs: number; spawnMs: number } {
  // TURNLOG_TEST_SLOWDOWN fixes it instead, to reproduce a run (1: the quiet machine's budgets).
  const given = Number(process.env.TURNLOG_TEST_SLOWDOWN);
  if (given >= 1) return { slowdown: given, cpuMs: Number.NaN, spawnMs: Number.NaN };
  const cpuMs = median([0, 1, 2].map(() => timed(cpuWork)));
  const spawnMs = median([0, 1, 2].map(() => timed(startNode)));
  const slowdown = Math.max(1, cpuMs / referenceCpuMs, spawnMs / referenceSpawnMs);
  return { slowdown: Math.round(slowdown * 100) / 100, cpuMs, spawnMs };
}

/** The budget scaled by the slowdown (`TURNLOG_TEST_SLOWDOWN` sets the slowdown, see above). */
export function scaled(ms: number, slowdown: number): number {
  return Math.round(ms * slowdown);
}

// Both measured on the 2-core machine at load below 1 (the quiet baseline of the budgets).
const referenceCpuMs = 60;
const referenceSpawnMs = 60;

function cpuWork(): void {
  let digest = Buffer.alloc(32);
  for (let round = 0; round < 40_000; round += 1) {
    digest = createHash('sha256').update(digest).digest();
  }
}

function startNode(): void {
  spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
}

function timed(work: () => void): number {
  const start = performance.now();
  work();
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)] as number;
}
