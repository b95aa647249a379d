import {
  matchesFilter,
  quietestFirst,
  type SessionFilter,
  type SessionOverview,
  type SessionStatus,
  sessionOverview,
  sessionStatuses,
} from '../../operations/session-overview.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import { ago, parseCount, parseDuration } from '../duration.ts';
import { textTable } from '../text-table.ts';

/** `turnlog sessions`: every session's latest run, filtered. */
export const sessionsCommand: CommandDefinition = {
  name: 'sessions',
  summary:
    'list sessions: waiting for a person, failed, running, parked, on a worker, quiet for long',
  details:
    "Each session's latest run: its status, state, worker, when the session last wrote a fact, and the decisions a person owes. Reads every session of the store (progress on stderr).",
  args: [],
  options: [
    {
      name: 'status',
      value: 'LIST',
      description: 'only these statuses (awaiting: a person owes a decision)',
      choices: sessionStatuses,
      list: true,
    },
    {
      name: 'worker',
      value: 'ID',
      description: 'only runs whose latest fact this worker appended',
    },
    {
      name: 'older-than',
      value: 'DURATION',
      description: 'only sessions with no fact for this long (90s, 30m, 2h, 7d)',
    },
    { name: 'limit', value: 'N', description: 'at most N sessions (the quietest first)' },
  ],
  uses: { store: true, runtime: 'none' },
  examples: [
    ['turnlog sessions --status awaiting', 'every run waiting for a person'],
    ['turnlog sessions --status running,parked --older-than 2h --json', 'stuck runs, for a script'],
  ],
  async run(context) {
    const filter = filterOf(context);
    const limit =
      typeof context.options.limit === 'string'
        ? parseCount(context.options.limit, 'limit')
        : undefined;
    const found = await listSessions(context, filter);
    const shown = limit === undefined ? found : found.slice(0, limit);
    if (context.json) context.output.json({ sessions: shown, total: found.length });
    else printSessions(context, shown, found.length);
    return 'ok';
  },
};

function filterOf(context: CommandContext): SessionFilter {
  const { status, worker } = context.options;
  const olderThan = context.options['older-than'];
  return {
    ...(Array.isArray(status) ? { statuses: status as SessionStatus[] } : {}),
    ...(typeof worker === 'string' ? { worker } : {}),
    ...(typeof olderThan === 'string'
      ? { quietSince: context.now() - parseDuration(olderThan, 'older-than') }
      : {}),
  };
}

/** Every session of the store that passes the filter, the quietest first. */
async function listSessions(
  context: CommandContext,
  filter: SessionFilter,
): Promise<SessionOverview[]> {
  const store = await context.store();
  const ids = await store.sessions();
  const progress = context.output.progress('sessions', ids.length);
  const found: SessionOverview[] = [];
  for (const sessionId of ids) {
    if (context.signal.aborted) break;
    const overview = sessionOverview(await store.read(sessionId));
    if (overview !== undefined && matchesFilter(overview, filter)) found.push(overview);
    progress.advance();
  }
  progress.done();
  return found.sort(quietestFirst);
}

function printSessions(context: CommandContext, shown: SessionOverview[], total: number): void {
  if (total === 0) {
    context.output.line('No session matches.');
    return;
  }
  const now = context.now();
  const rows = shown.map((session) => [
    session.sessionId,
    session.status,
    session.state ?? '',
    session.worker ?? '',
    ago(session.lastAt, now),
    session.pending.map((decision) => `${decision.name} ${decision.callId}`).join(', '),
    session.input ?? '',
  ]);
  const lines = textTable([
    ['SESSION', 'STATUS', 'STATE', 'WORKER', 'QUIET', 'OWED', 'INPUT'],
    ...rows,
  ]);
  for (const line of lines) context.output.line(line);
  if (shown.length < total)
    context.output.line(`(${shown.length} of ${total}; --limit shows more)`);
}
