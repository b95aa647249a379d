import { type ReplayReport, replaySession } from '../../operations/replay-session.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import { requiredRuntimeOptions } from '../runtime-module.ts';
import { sessionFacts } from '../session-facts.ts';

/** `turnlog replay SESSION --runtime FILE`: a recorded session through the current code. */
export const replayCommand: CommandDefinition = {
  name: 'replay',
  summary:
    'replay a recorded session through the --runtime code, with no provider and no side effect',
  details:
    "The session's recorded model responses (its step.completed facts) are played back as the model; every tool's execute returns its recorded result; a person's recorded decisions are given again when asked. Prints where the new code differs: the first request it would send otherwise, calls asked, decided, run or settled otherwise, other states, another end. Exit 1 on any difference. In vitest: replaySession() from the package. Limits: architecture/operations.md.",
  args: [{ name: 'SESSION', description: 'the session id' }],
  options: [
    { name: 'run', value: 'RUN', description: 'only this run (default: every run of the session)' },
  ],
  uses: { store: true, runtime: 'required' },
  examples: [
    ['turnlog replay s-42 --runtime ./my-runtime.ts', "yesterday's run against today's code"],
  ],
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const facts = await sessionFacts(await context.store(), sessionId);
    const runtime = await requiredRuntimeOptions(context);
    const run = context.options.run;
    const report = await replaySession({
      facts,
      runtime,
      ...(typeof run === 'string' ? { runIds: [run] } : {}),
    });
    if (context.json) context.output.json(report);
    else printReport(context, report);
    return report.differences.length > 0 ? 'found' : 'ok';
  },
};

function printReport(context: CommandContext, report: ReplayReport): void {
  for (const run of report.runs) {
    const { recorded, replayed } = run;
    context.output.line(
      `run ${run.runId}: recorded ${recorded.status} after ${recorded.requests.length} requests; replayed ${replayed.status} after ${replayed.requests.length}`,
    );
    if (run.differences.length === 0) context.output.line('  no difference');
    for (const difference of run.differences)
      context.output.line(`  ${difference.kind}: ${difference.message}`);
  }
  context.output.line(
    report.differences.length === 0
      ? 'The current code does what the recording did.'
      : `${report.differences.length} difference${report.differences.length === 1 ? '' : 's'}.`,
  );
}
