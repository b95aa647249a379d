// One process of the side-by-side kill campaign (bench/dbos-kill-campaign.ts): it runs the
// benchmarks' tool conversation for the runs it is given, `inFlight` at a time, on one system,
// until each has ended, and is SIGKILLed by the parent at random moments and started again.
// Its `add` tool has a side effect recorded outside both systems: a row in a ledger table
// (system, run, call), committed before the tool returns, then `toolMs` of waiting (the
// service's answer travelling back). Systems:
//   dbos               the conversation as a DBOS workflow (bench/dbos-agent.ts); DBOS.launch()
//                      recovers the pending workflows of the killed process
//   turnlog            turnlog on postgresStore, a worker (fixed id, `leaseMs`): recover() at
//                      start, and its takeover scan once the killed process's leases lapse; the
//                      tool is neither idempotent nor reconciling, so a call cut by a kill
//                      (`tool.indeterminate`) waits for a person, who answers `report-unknown`
//   turnlog-reconcile  the same, with a `reconcile` that looks the call up in the ledger
// Lines on stdout: `ready`, `ended <runId>`, `answered <runId> <callId>` (a person answered an
// indeterminate call), `failed <runId> <message>`, `done`.
// Usage: node bench/dbos-kill-child.ts '<KillChildOptions as JSON>'
import pg from 'pg';
import { z } from 'zod';
import { createRuntime, type Runtime } from '../runtime.ts';
import { postgresStore } from '../store/postgres/postgres-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { addTool, conversationModel, conversationPrompt } from './conversation.ts';
import { type AgentToolExecutor, launchDbosAgent } from './dbos-agent.ts';

/** What the parent passes (as JSON in argv[2]). */
export interface KillChildOptions {
  system: 'dbos' | 'turnlog' | 'turnlog-reconcile';
  /** The runs to bring to their end (session ids, workflow ids). */
  runIds: string[];
  inFlight: number;
  steps: number;
  toolMs: number;
  /** The server, for turnlog's store and the ledger. */
  connectionString: string;
  /** turnlog's schema; the ledger table's schema; DBOS's system database. */
  turnlogSchema: string;
  ledgerSchema: string;
  dbosDatabase: string;
  leaseMs: number;
}

const json = process.argv[2];
if (json === undefined) throw new Error("usage: dbos-kill-child.ts '<KillChildOptions as JSON>'");
const options = JSON.parse(json) as KillChildOptions;
const print = (line: string) => process.stdout.write(`${line}\n`);
const oneLine = (error: unknown) =>
  (error instanceof Error ? `${error.name}: ${error.message}` : String(error))
    .replaceAll('\n', ' ')
    .slice(0, 300);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const keepAlive = setInterval(() => {}, 60_000);

const ledgerPool = new pg.Pool({
  connectionString: options.connectionString,
  max: options.inFlight + 1,
  application_name: 'turnlog_dbos_kill_ledger',
});
ledgerPool.on('error', () => {});
const ledger = `${options.ledgerSchema}.ledger`;

/** The side effect: one ledger row for this execution of the call, committed. */
async function recordEffect(runId: string, callId: string): Promise<void> {
  await ledgerPool.query(`INSERT INTO ${ledger} (system, run_id, call_id) VALUES ($1, $2, $3)`, [
    options.system,
    runId,
    callId,
  ]);
  await sleep(options.toolMs);
}

/** Runs `work` for every run id, `inFlight` at a time. */
async function eachRun(work: (runId: string) => Promise<void>): Promise<void> {
  const queue = [...options.runIds];
  const lane = async () => {
    for (let runId = queue.shift(); runId !== undefined; runId = queue.shift()) {
      await work(runId).then(
        () => print(`ended ${runId}`),
        (error: unknown) => print(`failed ${runId} ${oneLine(error)}`),
      );
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, lane));
}

async function runDbos(): Promise<void> {
  const execute: AgentToolExecutor = async (call, workflowId) => {
    await recordEffect(workflowId, call.toolCallId);
    return addTool.execute(call.input);
  };
  const agent = await launchDbosAgent({
    database: options.dbosDatabase,
    model: conversationModel(options.steps),
    execute,
    applicationName: 'turnlog_dbos_kill_dbos',
  });
  print('ready');
  await eachRun(async (runId) => {
    const steps = await agent.ensure(runId, options.steps);
    if (steps !== options.steps) throw new Error(`${steps} model steps`);
  });
  await agent.shutdown();
}

function turnlogRuntime(): Runtime {
  const addInput = z.object({ a: z.number(), b: z.number() });
  const reconcile =
    options.system === 'turnlog-reconcile'
      ? {
          reconcile: async (
            input: { a: number; b: number },
            context: { sessionId: string; callId: string },
          ) => {
            const found = await ledgerPool.query(
              `SELECT 1 FROM ${ledger} WHERE system = $1 AND run_id = $2 AND call_id = $3`,
              [options.system, context.sessionId, context.callId],
            );
            return found.rowCount === 0
              ? ({ status: 'not-done' } as const)
              : ({ status: 'done', output: addTool.execute(input) } as const);
          },
        }
      : {};
  return createRuntime({
    model: conversationModel(options.steps),
    tools: {
      add: defineTool({
        description: addTool.description,
        inputSchema: addInput,
        execute: async (input, context) => {
          await recordEffect(context.sessionId, context.callId);
          return addTool.execute(input);
        },
        ...reconcile,
      }),
    },
    store: postgresStore({
      connectionString: options.connectionString,
      schema: options.turnlogSchema,
    }),
    limits: { maxSteps: options.steps, maxAttempts: 100 },
    worker: { id: `kill-${options.system}`, leaseMs: options.leaseMs },
  });
}

/** Answers a run's indeterminate calls as a person would: `report-unknown`. */
async function answerPeople(runtime: Runtime, runId: string): Promise<void> {
  for (const open of await runtime.pending(runId)) {
    if (open.kind !== 'indeterminate') continue;
    await runtime.decide({ sessionId: runId, callId: open.callId, decision: 'report-unknown' });
    print(`answered ${runId} ${open.callId}`);
  }
}

async function runTurnlog(): Promise<void> {
  const runtime = turnlogRuntime();
  const store = postgresStore({
    connectionString: options.connectionString,
    schema: options.turnlogSchema,
  });
  await runtime.recover();
  print('ready');
  await eachRun(async (runId) => {
    let facts = await store.read(runId);
    if (facts.length === 0) {
      const turn = await runtime.send({ sessionId: runId, text: conversationPrompt });
      for await (const _event of turn.events);
      await turn.done;
      facts = await store.read(runId);
    }
    // A run the killed process drove: recover() or the takeover scan resumes it here; a call
    // it cut waits for a person.
    while (!facts.some((fact) => fact.type === 'run.ended')) {
      await answerPeople(runtime, runId).catch(() => {});
      await sleep(100);
      facts = await store.read(runId);
    }
  });
  await runtime.close();
  await store.close();
}

if (options.system === 'dbos') await runDbos();
else await runTurnlog();
await ledgerPool.end();
print('done');
clearInterval(keepAlive);
