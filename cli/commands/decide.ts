import type { PermissionDecision } from '../../events/facts.ts';
import { sessionOverview } from '../../operations/session-overview.ts';
import { cliRuntime, untilIdle } from '../cli-runtime.ts';
import type { CommandContext, CommandDefinition } from '../command-definition.ts';
import type { ExitName } from '../exit-codes.ts';

/** The decision words of the CLI and the runtime's decisions they stand for. */
const decisions: Record<string, PermissionDecision> = {
  allow: 'allow',
  deny: 'deny',
  unknown: 'report-unknown',
};

/** `turnlog decide SESSION CALL allow|deny|unknown`: answers what a person owes, as `runtime.decide()` does. */
export const decideCommand: CommandDefinition = {
  name: 'decide',
  summary: "answer a decision a person owes (runtime.decide, with the runtime's checks)",
  details:
    'allow or deny a call that asks permission; unknown reports a call that may have run as of unknown outcome. The decision goes through runtime.decide() on a runtime built from --runtime (your tools, model and policy): a decision nobody owes, or another than one already made, is refused (exit 4), an unknown session or call is exit 3. The run then goes on: in this process on the folder store or when no worker drives it (the command waits until it parks or ends; Ctrl-C leaves it for recover()), or on the worker that drives it. On PostgreSQL the runtime of the command is a worker while it runs: like any worker it may take over runs whose workers died, and hands them over when it exits.',
  args: [
    { name: 'SESSION', description: 'the session id' },
    { name: 'CALL', description: 'the call id (turnlog sessions --status awaiting lists them)' },
    { name: 'DECISION', description: 'the answer', choices: Object.keys(decisions) },
  ],
  options: [
    { name: 'reason', value: 'TEXT', description: 'why, recorded with the decision' },
    {
      name: 'no-wait',
      description: 'return once the decision is durable, without waiting for the run',
    },
  ],
  uses: { store: true, runtime: 'required' },
  examples: [['turnlog decide s-42 call_7 allow --runtime ./my-runtime.ts', 'lets the call run']],
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const callId = context.args.CALL as string;
    const decision = decisions[context.args.DECISION as string] as PermissionDecision;
    const reason = context.options.reason;
    return act(context, sessionId, `${decision} ${callId}`, (runtime) =>
      runtime.decide({
        sessionId,
        callId,
        decision,
        ...(typeof reason === 'string' ? { reason } : {}),
      }),
    );
  },
};

/** `turnlog stop SESSION`: stops the session's unfinished run, as `runtime.stop()` does. */
export const stopCommand: CommandDefinition = {
  name: 'stop',
  summary: "stop a session's unfinished run (runtime.stop): it ends aborted",
  details:
    'Goes through runtime.stop(); calls not yet settled settle cancelled and the run ends aborted. Waits until the run has ended. --runtime is optional on the folder store (a stop never asks the model, and without it no tool runs) and required on PostgreSQL, where the runtime of the command is a worker while it runs (it may take over runs whose workers died, and must drive them with your tools and model).',
  args: [{ name: 'SESSION', description: 'the session id' }],
  options: [
    { name: 'reason', value: 'TEXT', description: 'why, recorded with the stop' },
    {
      name: 'no-wait',
      description: 'return once the stop is durable, without waiting for the end',
    },
  ],
  uses: { store: true, runtime: 'optional' },
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const reason = context.options.reason;
    return act(context, sessionId, 'stop', (runtime) =>
      runtime.stop({ sessionId, ...(typeof reason === 'string' ? { reason } : {}) }),
    );
  },
};

/** Does the action on a runtime over the CLI's store, then reports where the run stands. */
async function act(
  context: CommandContext,
  sessionId: string,
  what: string,
  action: (runtime: Awaited<ReturnType<typeof cliRuntime>>) => Promise<void>,
): Promise<ExitName> {
  const runtime = await cliRuntime(context);
  try {
    await action(runtime);
    if (context.options['no-wait'] !== true) {
      await untilIdle(await context.store(), sessionId, context.signal);
    }
    const session = sessionOverview(await runtime.facts(sessionId));
    if (context.json) context.output.json({ done: what, session });
    else {
      context.output.line(
        `${sessionId}: ${what} done; the run is ${session?.status} in ${session?.state ?? '(no state)'}`,
      );
    }
    return context.signal.aborted ? 'interrupted' : 'ok';
  } finally {
    await runtime.close();
  }
}
