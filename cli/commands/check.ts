import { checkDeploy, type DeployCheckReport } from '../../operations/deploy-check.ts';
import { createRuntime } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import { requiredRuntimeOptions } from '../runtime-module.ts';

/** `turnlog check --runtime FILE`: which unfinished runs this code cannot continue. */
export const checkCommand: CommandDefinition = {
  name: 'check',
  summary:
    'the deploy check: name every unfinished run the --runtime code cannot continue, and why',
  details:
    "Every unfinished run is rebuilt with this turnlog's turn machine, as recover() would, and compared with the --runtime module's tools (runtime.fingerprint()): a call still to run of a tool that is gone or whose input schema changed, a run the machine cannot replay, a session the store cannot read. Exit 1 when any run is named. Nothing is written; no tool or model is called. In CI: checkDeploy() from the package.",
  args: [],
  options: [],
  uses: { store: true, runtime: 'required' },
  examples: [
    ['turnlog check --runtime ./my-runtime.ts --database-url $DATABASE_URL', 'before a deploy'],
  ],
  async run(context) {
    const fingerprint = await currentFingerprint(context);
    const store = await context.store();
    let progress: ReturnType<typeof context.output.progress> | undefined;
    const report = await checkDeploy({
      store,
      fingerprint,
      signal: context.signal,
      onProgress(checked, total) {
        progress ??= context.output.progress('check', total);
        progress.advance();
        if (checked === total) progress.done();
      },
    });
    if (context.json) context.output.json(report);
    else printReport(context, report);
    if (context.signal.aborted) return 'interrupted';
    return report.blocked.length > 0 ? 'found' : 'ok';
  },
};

/** The fingerprint of the --runtime module's runtime (on a memory store: nothing is opened). */
async function currentFingerprint(context: CommandContext) {
  const options = await requiredRuntimeOptions(context);
  const runtime = createRuntime({ ...options, store: memoryStore() });
  try {
    return runtime.fingerprint();
  } finally {
    await runtime.close();
  }
}

function printReport(context: CommandContext, report: DeployCheckReport): void {
  const { checked, blocked } = report;
  context.output.line(
    `Checked ${checked} unfinished run${checked === 1 ? '' : 's'}: ${blocked.length === 0 ? 'this code can continue every one' : `${blocked.length} cannot be continued by this code`}.`,
  );
  for (const run of blocked) {
    context.output.line(
      `  ${run.sessionId ?? '(unknown session)'} ${run.runId ?? ''} in ${run.state ?? '(no state)'}`,
    );
    for (const blocker of run.blockers)
      context.output.line(`    ${blocker.kind}: ${blocker.message}`);
  }
  const kinds = Object.entries(report.differences);
  if (kinds.length > 0) {
    context.output.line(
      `Runs it continues under other conditions: ${kinds.map(([kind, count]) => `${kind} ${count}`).join(', ')}.`,
    );
  }
}
