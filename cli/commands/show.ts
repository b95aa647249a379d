import { projectTurn } from '../../events/project-turn.ts';
import { sessionOverview } from '../../operations/session-overview.ts';
import type { CommandDefinition } from '../command-definition.ts';
import { timelineEntry, timelineLine } from '../fact-line.ts';
import { sessionFacts } from '../session-facts.ts';

/** `turnlog show SESSION`: the session's timeline, in words. */
export const showCommand: CommandDefinition = {
  name: 'show',
  summary: "a session's timeline: every fact in words, the state it led to, what a person owes",
  details:
    'With --json: { session, timeline, view }, where view is projectTurn of the log (the read model a UI renders) and session is the overview turnlog sessions lists.',
  args: [{ name: 'SESSION', description: 'the session id' }],
  options: [{ name: 'run', value: 'RUN', description: 'only the facts of this run' }],
  uses: { store: true, runtime: 'none' },
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const facts = await sessionFacts(await context.store(), sessionId);
    const run = context.options.run;
    const view = projectTurn(facts);
    const session = sessionOverview(facts);
    const timeline = facts
      .filter((fact) => typeof run !== 'string' || fact.runId === run)
      .map((fact) => timelineEntry(fact, view));
    if (context.json) {
      context.output.json({ session, timeline, view });
      return 'ok';
    }
    context.output.line(
      `Session ${sessionId}: ${session?.status} in ${session?.state ?? '(no state)'}, ${view.runs.length} run${view.runs.length === 1 ? '' : 's'}`,
    );
    let runId: string | undefined;
    for (const entry of timeline) {
      if (entry.runId !== runId) {
        runId = entry.runId;
        context.output.line(`run ${runId}`);
      }
      context.output.line(timelineLine(entry));
    }
    for (const decision of view.pending) {
      context.output.line(
        `Owed: ${decision.kind === 'permission' ? 'allow|deny' : 'unknown'} for ${decision.name} ${decision.callId}: turnlog decide ${sessionId} ${decision.callId} ${decision.kind === 'permission' ? 'allow' : 'unknown'} --runtime FILE`,
      );
    }
    return 'ok';
  },
};
