// Workers-campaign child: one worker (a runtime on a shared postgresStore) that takes commands
// from the parent on stdin, one JSON object per line, and reports on stdout, one line each,
// written synchronously so the parent knows what happened before it kills or stops the process:
//   ready <workerId>                        the runtime is built (and recover() ran, if asked)
//   recovered <count>                       what recover() returned (recoverAtStart)
//   ok <id>                                 the command resolved
//   err <id> <ErrorName> <message>          the command threw
//   done <sessionId> <status> <reason>      the turn.done of a run this worker sent resolved
//   donefail <sessionId> <ErrorName> <msg>  …or rejected
//   closed                                  runtime.close() resolved (command `close`)
// Commands:
//   {"id":1,"op":"send","sessionId":"s1","text":"…"}
//   {"id":2,"op":"decide","sessionId":"s1","callId":"c2a","decision":"allow"}
//   {"id":3,"op":"close"}
// Usage: node test/crash/workers-child.ts '<WorkerChildOptions as JSON>'
import { createInterface } from 'node:readline';
import type { PermissionDecision } from '../../events/facts.ts';
import { createRuntime } from '../../runtime.ts';
import { defaultTimeouts } from '../../store/postgres/postgres-connection.ts';
import { postgresStore } from '../../store/postgres/postgres-store.ts';
import { serviceModel, serviceTools } from './service-scenario.ts';
import { type WorkerChildOptions, workersModel, workersTools } from './workers-scenario.ts';

const json = process.argv[2];
if (json === undefined) throw new Error("usage: workers-child.ts '<WorkerChildOptions as JSON>'");
const options = JSON.parse(json) as WorkerChildOptions;

const print = (line: string) => process.stdout.write(`${line}\n`);
const oneLine = (text: string) => text.replaceAll('\n', ' ').slice(0, 500);
const describe = (error: unknown) =>
  error instanceof Error
    ? `${error.name} ${oneLine(error.message)}`
    : `NotAnError ${oneLine(String(error))}`;

const keepAlive = setInterval(() => {}, 60_000);
// The store's time bounds, scaled as the campaign's own are (a loaded machine, not a wedged database).
const slowdown = options.slowdown ?? 1;
const timeouts = Object.fromEntries(
  Object.entries(defaultTimeouts).map(([name, ms]) => [name, Math.round(ms * slowdown)]),
);
const store = postgresStore({
  connectionString: options.connectionString,
  schema: options.schema,
  timeouts,
});
const service = options.service && {
  ...options.service,
  toolMs: options.toolMs,
  chunkMs: options.chunkMs,
  requestFile: options.requestFile,
  workerId: options.workerId,
};
const runtime = createRuntime({
  model: service === undefined ? workersModel(options) : serviceModel(service),
  tools: service === undefined ? workersTools(options) : serviceTools(service),
  store,
  // Every takeover in `requesting` is a new recorded attempt: leave room for many.
  limits: { maxAttempts: 100 },
  worker: { id: options.workerId, leaseMs: options.leaseMs },
});
if (options.recoverAtStart) {
  const recovered = await runtime.recover();
  print(`recovered ${recovered.length}`);
}
print(`ready ${options.workerId}`);

interface Command {
  id: number;
  op: 'send' | 'decide' | 'close';
  sessionId?: string;
  text?: string;
  callId?: string;
  decision?: PermissionDecision;
}

async function perform(command: Command): Promise<void> {
  const sessionId = command.sessionId ?? '';
  if (command.op === 'send') {
    const turn = await runtime.send({ sessionId, text: command.text ?? '' });
    // Drain the events (nothing reads them) and report how the handle ended.
    void (async () => {
      for await (const _event of turn.events) {
        // nothing: the parent reads the log
      }
    })().catch(() => {});
    turn.done.then(
      (result) => print(`done ${sessionId} ${result.status} ${result.reason}`),
      (error: unknown) => print(`donefail ${sessionId} ${describe(error)}`),
    );
    return;
  }
  if (command.op === 'decide') {
    await runtime.decide({
      sessionId,
      callId: command.callId ?? '',
      decision: command.decision ?? 'allow',
    });
    return;
  }
  await runtime.close();
  print('closed');
  clearInterval(keepAlive);
  process.exit(0);
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const command = JSON.parse(line) as Command;
  perform(command).then(
    () => print(`ok ${command.id}`),
    (error: unknown) => print(`err ${command.id} ${describe(error)}`),
  );
}
