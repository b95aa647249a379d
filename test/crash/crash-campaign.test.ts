import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrate, scaled } from '../helpers/calibration.ts';
import { type EpisodeReport, runEpisode } from './crash-campaign.ts';

// A fixed default keeps `npm test` reproducible; set TURNLOG_CRASH_SEED to explore others, and
// TURNLOG_CRASH_EPISODE to replay one episode of a failing seed.
const seed = Number(process.env.TURNLOG_CRASH_SEED ?? 20_261_130);
const onlyEpisode = process.env.TURNLOG_CRASH_EPISODE;
const minKills = Number(process.env.TURNLOG_CRASH_KILLS ?? 200);
/** Episodes run side by side (each is one child process at a time). */
const lanes = 2;
/** Kills per episode at most; then a child is left to finish the run. */
const maxKillsPerEpisode = 24;
// The work is budgeted by count (kills); its time bounds scale with how loaded the machine is
// (issue 26, defect 7: at load 9–11 the campaign hit a fixed 240 s timeout).
const { slowdown } = calibrate();
const childTimeoutMs = scaled(30_000, slowdown);

let root: string;
let failed = false;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'turnlog-crash-campaign-'));
});
afterAll(() => {
  // A failing campaign keeps its stores for inspection (the failure names the folder).
  if (!failed) rmSync(root, { recursive: true, force: true });
});

function summary(reports: readonly EpisodeReport[], elapsedMs: number): string {
  const kills = reports.flatMap((report) => report.kills);
  const landed = new Map<string, number>();
  for (const kill of kills) landed.set(kill.landed, (landed.get(kill.landed) ?? 0) + 1);
  const children = reports.reduce((sum, report) => sum + report.children, 0);
  const rows = [...landed].sort((left, right) => right[1] - left[1]);
  return [
    `crash campaign seed ${seed}: ${kills.length} kills over ${reports.length} episodes, ${children} children, ${(elapsedMs / 1000).toFixed(1)} s`,
    ...rows.map(([where, count]) => `  ${String(count).padStart(4)}  ${where}`),
  ].join('\n');
}

describe('the crash campaign', () => {
  it(
    `survives at least ${minKills} SIGKILLs at random moments, every log intact after each`,
    async () => {
      const began = performance.now();
      const reports: EpisodeReport[] = [];
      try {
        if (onlyEpisode !== undefined) {
          const index = Number(onlyEpisode);
          reports.push(
            await runEpisode({ root, seed, index, maxKills: maxKillsPerEpisode, childTimeoutMs }),
          );
        } else {
          let kills = 0;
          let next = 0;
          const lane = async () => {
            while (kills < minKills) {
              const index = next;
              next += 1;
              const report = await runEpisode({
                root,
                seed,
                index,
                maxKills: maxKillsPerEpisode,
                childTimeoutMs,
              });
              kills += report.kills.length;
              reports.push(report);
            }
          };
          await Promise.all(Array.from({ length: lanes }, lane));
        }
      } catch (error) {
        failed = true;
        throw error;
      }
      console.info(
        `${summary(reports, performance.now() - began)}\n  (calibrated slowdown ${slowdown}: child timeout ${childTimeoutMs} ms)`,
      );
      const kills = reports.flatMap((report) => report.kills);
      if (onlyEpisode === undefined) expect(kills.length).toBeGreaterThanOrEqual(minKills);
      // The schedule aims at work in progress: few kills land before the run or after its end.
      const idle = kills.filter(
        (kill) => kill.landed === 'before run.started' || kill.landed === 'after run.ended',
      );
      expect(idle.length).toBeLessThanOrEqual(Math.ceil(kills.length * 0.15));
      if (onlyEpisode === undefined) {
        // …and reaches the windows that matter: mid-request, a tool executing, a parked run,
        // recovery itself.
        const landed = new Set(kills.map((kill) => kill.landed));
        for (const where of [
          'requesting.streaming',
          'settlingTools.running (tool running)',
          'awaitingPermission',
        ]) {
          expect(landed).toContain(where);
        }
        expect(
          kills.filter((kill) => kill.landed.endsWith('(in recover())')).length,
        ).toBeGreaterThan(0);
      }
    },
    scaled(Math.max(240_000, minKills * 500), slowdown),
  );
});
