import { durationMs } from '../operations/session-overview.ts';
import { CliError } from './cli-error.ts';

/** `90s`, `30m`, `2h`, `7d` in milliseconds; anything else is a usage error naming `option`. */
export function parseDuration(text: string, option: string): number {
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new CliError({
      message: `turnlog: --${option} ${text} is not a duration; write a number and a unit: 90s, 30m, 2h, 7d`,
      exit: 'usage',
    });
  }
  return ms;
}

/** A whole number ≥ 1 given as an option's text. */
export function parseCount(text: string, option: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) {
    throw new CliError({
      message: `turnlog: --${option} ${text} must be a whole number ≥ 1`,
      exit: 'usage',
    });
  }
  return value;
}

/** How long ago `at` was, shortly: `42s`, `5m`, `3h`, `2d`. */
export function ago(at: string, now: number): string {
  const ms = Math.max(0, now - Date.parse(at));
  if (ms < 60_000) return `${Math.floor(ms / 1000)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)}h`;
  return `${Math.floor(ms / 86_400_000)}d`;
}
