import { mkdir } from 'node:fs/promises';
import { purgeSessions } from '../../store/retention/purge-sessions.ts';
import type { EndedSession, SessionRetention } from '../../store/session-retention.ts';
import { CliError } from '../cli-error.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import { parseCount, parseDuration } from '../duration.ts';

/** `turnlog purge --older-than 90d [--archive DIR]`: retention, over `purgeSessions`. */
export const purgeCommand: CommandDefinition = {
  name: 'purge',
  summary: 'remove (or archive, then remove) the sessions whose every run ended before a time',
  details:
    'A session goes when no run of it is open and its last run ended before --ended-before (or longer ago than --older-than); a session with an unfinished run, or one that starts a run meanwhile, stays. With --archive DIR each session is first written to DIR/<session>.jsonl (the format of export; turnlog import reads it back), durably, before it is removed. A kill leaves every session whole or gone; running it again finishes. --dry-run lists what would go. Ctrl-C stops between batches and reports what was done.',
  args: [],
  options: [
    {
      name: 'older-than',
      value: 'DURATION',
      description: 'sessions whose last run ended longer ago than this (90s, 30m, 2h, 7d)',
    },
    {
      name: 'ended-before',
      value: 'TIME',
      description:
        'sessions whose last run ended before this time (ISO 8601, e.g. 2026-01-01T00:00:00Z)',
    },
    {
      name: 'archive',
      value: 'DIR',
      description: 'archive each session into DIR (created if missing) before removing it',
    },
    { name: 'dry-run', description: 'list the sessions that would go, change nothing' },
    {
      name: 'batch',
      value: 'N',
      description: 'sessions removed per store call (one transaction on PostgreSQL)',
      default: '100',
    },
  ],
  uses: { store: true, runtime: 'none' },
  examples: [
    [
      'turnlog purge --older-than 90d --archive /var/backups/turnlog',
      'archive, then remove, what ended 90 days ago',
    ],
    ['turnlog purge --ended-before 2026-01-01T00:00:00Z --dry-run', 'what would go'],
  ],
  async run(context) {
    const endedBefore = cutOff(context);
    const store = await context.store();
    if (context.options['dry-run'] === true) return dryRun(context, store, endedBefore);
    const archiveDir =
      typeof context.options.archive === 'string' ? context.options.archive : undefined;
    if (archiveDir !== undefined) await mkdir(archiveDir, { recursive: true });
    let progress: ReturnType<typeof context.output.progress> | undefined;
    const report = await purgeSessions(store, {
      endedBefore,
      batchSize: parseCount(String(context.options.batch), 'batch'),
      signal: context.signal,
      ...(archiveDir === undefined ? {} : { archiveDir }),
      onProgress: ({ total }) => {
        progress ??= context.output.progress('purge', total);
        progress.advance();
      },
    });
    progress?.done();
    if (context.json) {
      context.output.json({ endedBefore: endedBefore.toISOString(), archiveDir, ...report });
    } else {
      const archived = archiveDir === undefined ? '' : ` (archived in ${archiveDir})`;
      context.output.line(
        `Removed ${report.removed} of ${report.found} sessions whose last run ended before ${endedBefore.toISOString()}${archived}.`,
      );
      for (const { sessionId, outcome } of report.left)
        context.output.line(`  left ${sessionId}: ${outcome}`);
      if (report.stopped) context.output.line('Stopped before the end: run it again to go on.');
    }
    return report.stopped ? 'interrupted' : 'ok';
  },
};

/** The time from `--ended-before` or `--older-than` (exactly one of them). */
function cutOff(context: CommandContext): Date {
  const olderThan = context.options['older-than'];
  const endedBefore = context.options['ended-before'];
  if ((typeof olderThan === 'string') === (typeof endedBefore === 'string')) {
    throw new CliError({
      message:
        'turnlog purge: give --older-than DURATION or --ended-before TIME (one of them): which sessions may go',
      exit: 'usage',
    });
  }
  if (typeof olderThan === 'string') {
    return new Date(context.now() - parseDuration(olderThan, 'older-than'));
  }
  const time = new Date(String(endedBefore));
  if (Number.isNaN(time.getTime())) {
    throw new CliError({
      message: `turnlog purge: --ended-before ${String(endedBefore)} is not a time; write an ISO 8601 time such as 2026-01-01T00:00:00Z`,
      exit: 'usage',
    });
  }
  return time;
}

async function dryRun(
  context: CommandContext,
  store: SessionRetention,
  endedBefore: Date,
): Promise<'ok'> {
  const sessions: EndedSession[] = await store.endedSessions({ endedBefore });
  if (context.json) {
    context.output.json({
      endedBefore: endedBefore.toISOString(),
      dryRun: true,
      found: sessions.length,
      sessions,
    });
    return 'ok';
  }
  for (const session of sessions) {
    context.output.line(
      `would remove ${session.sessionId} (${session.lastSeq} facts, ended ${session.endedAt})`,
    );
  }
  context.output.line(
    `${sessions.length} sessions ended before ${endedBefore.toISOString()}; nothing was changed.`,
  );
  return 'ok';
}
