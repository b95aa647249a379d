// Crash-test child: runs (mode `start`) or recovers and continues (mode `recover`) the crash
// scenario's run (or, with `service`, the service scenario's) on a lowdbStore, answering permission asks with `allow` and indeterminate calls
// with `report-unknown`. It reports progress on stdout, one line each, so the parent can SIGKILL
// it at a chosen moment:
//   ready                                     the runtime is built
//   recovered <status> <interruptedIn> <ids>  what recover() found (`none` when nothing was open)
//   fact <seq> <type> <state> [callId]        a new fact is durable and the machine took it
//   delta                                     a text delta streamed
//   exec <callId>                             a tool recorded its execution and is sleeping
//   effect <callId>                           (service) the service answered the call's request
//   hold <seq> <type>                         the store holds after this fact (options.hold)
//   ended <status> <reason>                   the run ended
//   history <json>                            runtime.history() once nothing is left to run
// Usage: node test/crash/agent-child.ts '<ChildOptions as JSON>'
import type { TurnHandle } from '../../machines/effects/turn-channel.ts';
import { createRuntime } from '../../runtime.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import {
  type ChildOptions,
  holdingStore,
  scenarioModel,
  scenarioTools,
  userText,
} from './crash-scenario.ts';
import {
  type ServiceChildOptions,
  serviceModel,
  serviceTools,
  serviceUserText,
} from './service-scenario.ts';

const json = process.argv[2];
if (json === undefined) throw new Error("usage: agent-child.ts '<ChildOptions as JSON>'");
const options = JSON.parse(json) as ChildOptions & Partial<ServiceChildOptions>;
const { sessionId } = options;

// Pipes are written synchronously on Linux and macOS: once printed, the parent can see it.
const print = (line: string) => process.stdout.write(`${line}\n`);
// The child ends when its run ends or when the parent kills it, never because nothing is left
// on its event loop: a held store or an unanswered ask waits for the kill, and without this
// Node could exit (unsettled top-level await) before the parent's SIGKILL lands.
const keepAlive = setInterval(() => {}, 60_000);

const store = holdingStore(lowdbStore({ dir: options.dir }), options.hold, (fact) =>
  print(`hold ${fact.seq} ${fact.type}`),
);
const { service } = options;
const runtime = createRuntime({
  model: service === undefined ? scenarioModel(options) : serviceModel(service),
  tools: service === undefined ? scenarioTools(options, print) : serviceTools(service, print),
  store,
  // Every restart in `requesting` is a new recorded attempt: leave room for many kills.
  limits: { maxAttempts: 100 },
});
const knownSeq = (await store.read(sessionId)).at(-1)?.seq ?? 0;
print('ready');

let answering: Promise<void> = Promise.resolve();
/** Answers every open decision: asks with `allow`, indeterminate calls with `report-unknown`. */
function answerPending(): Promise<void> {
  if (options.holdPermission === true) return answering;
  answering = answering.then(async () => {
    for (const pending of await runtime.pending(sessionId)) {
      await runtime.decide({
        sessionId,
        callId: pending.callId,
        decision: pending.kind === 'permission' ? 'allow' : 'report-unknown',
        inputHash: pending.inputHash,
      });
    }
  });
  return answering;
}

async function watch(turn: TurnHandle): Promise<void> {
  for await (const event of turn.events) {
    if (event.type === 'text.delta') print('delta');
    if (!('seq' in event) || event.seq <= knownSeq) continue;
    const callId = 'callId' in event ? ` ${event.callId}` : '';
    print(`fact ${event.seq} ${event.type} ${event.state ?? '-'}${callId}`);
    if (event.state === 'awaitingPermission') void answerPending();
  }
}

let turn: TurnHandle | undefined;
if (options.mode === 'start') {
  const text = service === undefined ? userText : serviceUserText(sessionId, service.seed);
  turn = await runtime.send({ sessionId, text });
} else {
  const report = (await runtime.recover()).find((run) => run.sessionId === sessionId);
  if (report?.status === 'damaged') throw new Error(`damaged log: ${report.damage.join('; ')}`);
  const indeterminate = report?.indeterminate.join(',') || '-';
  print(`recovered ${report?.status ?? 'none'} ${report?.interruptedIn ?? '-'} ${indeterminate}`);
  turn = report?.turn;
  if (report?.status === 'parked') void answerPending();
}
if (turn !== undefined) {
  await watch(turn);
  const result = await turn.done;
  print(`ended ${result.status} ${result.reason}`);
}
await answering;
print(`history ${JSON.stringify(await runtime.history(sessionId))}`);
await runtime.close();
clearInterval(keepAlive);
