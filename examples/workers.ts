// Several workers on one PostgreSQL log (README, "Running many workers").
// Run: DATABASE_URL=postgres://user:password@host:5432/database npx node examples/workers.ts
// (DATABASE_URL is required: the example creates a schema there). Offline: a scripted model.
//
// Workers A and B run in this process, worker C in a child process; all three share one schema.
//  1. A starts a run whose `deploy` asks permission. The run parks: no worker holds it. The
//     decision is answered on B, which drives the rest; A's handle follows the run to its end.
//  2. C starts a run whose `migrate` takes a while, and is killed (SIGKILL) in the middle of it.
//     Once C's lease expires, A or B takes the run over by itself: `migrate` may have run, so it
//     is never run again and waits for a person; the answer comes on A, and the run finishes.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createRuntime, defineTool, type Fact, postgresStore, scriptedModel } from '../index.ts';

const connectionString = process.env.DATABASE_URL ?? '';
if (connectionString === '') {
  // Never a database guessed for the user: the example creates a schema and writes to it.
  console.error(
    'examples/workers.ts needs a PostgreSQL: set DATABASE_URL=postgres://user:password@host:5432/database (it creates the schema turnlog_workers_example there, or TURNLOG_EXAMPLE_SCHEMA).',
  );
  process.exit(2);
}
const schema = process.env.TURNLOG_EXAMPLE_SCHEMA ?? 'turnlog_workers_example';
// A worker gives up a run it cannot renew within leaseMs; another takes it over soon after.
const leaseMs = 1_000;

/** The model of every worker: a pure function of the prompt, so any worker can go on with a run. */
function model() {
  const step = (call: { prompt: { role: string; content: unknown }[] }) => {
    const asked = JSON.stringify(call.prompt.find((message) => message.role === 'user'));
    if (call.prompt.some((message) => message.role === 'tool')) {
      return { text: asked.includes('igrate') ? 'Migration handled.' : 'Deployed v2 to staging.' };
    }
    return asked.includes('igrate')
      ? { toolCalls: [{ name: 'migrate', input: { database: 'orders' } }] }
      : { toolCalls: [{ name: 'deploy', input: { version: 'v2', target: 'staging' } }] };
  };
  return scriptedModel(Array.from({ length: 10 }, () => step));
}

function tools(executions: string) {
  return {
    deploy: defineTool({
      description: 'Deploys a version to a target.',
      inputSchema: z.object({ version: z.string(), target: z.string() }),
      permission: 'ask',
      execute: ({ version, target }) => `deployed ${version} to ${target}`,
    }),
    migrate: defineTool({
      description: 'Migrates a database (slow).',
      inputSchema: z.object({ database: z.string() }),
      execute: async ({ database }) => {
        appendFileSync(executions, `migrate ${database}\n`);
        await new Promise((resolve) => setTimeout(resolve, 60_000));
        return `migrated ${database}`;
      },
    }),
  };
}

function worker(id: string, executions: string) {
  const store = postgresStore({ connectionString, schema });
  return createRuntime({
    model: model(),
    tools: tools(executions),
    store,
    worker: { id, leaseMs },
  });
}

const by = (facts: Fact[], workerId: string) =>
  facts.filter((fact) => fact.workerId === workerId).length;

if (process.argv[2] === '--child') {
  // Worker C: start the migration, say when it runs, then wait to be killed.
  const [, , , sessionId = '', executions = ''] = process.argv;
  const c = worker('C', executions);
  const turn = await c.send({ sessionId, text: 'Migrate the orders database.' });
  for await (const event of turn.events) {
    if (event.type === 'tool.started') console.log(`started ${turn.runId}`);
  }
} else {
  const scratch = mkdtempSync(path.join(tmpdir(), 'turnlog-workers-'));
  const executions = path.join(scratch, 'executions.txt');
  appendFileSync(executions, '');
  const suffix = Date.now().toString(36);
  const a = worker('A', executions);
  const b = worker('B', executions);
  console.log(`workers A and B in this process (pid ${process.pid}), schema ${schema}`);

  // 1. A decision answered on another worker than the one that started the run.
  const deploy = await a.send({ sessionId: `deploy-${suffix}`, text: 'Deploy v2 to staging.' });
  for await (const event of deploy.events) {
    if (event.type === 'tool.permission.requested') break;
  }
  const [ask] = await b.pending(deploy.sessionId);
  console.log(`A: sent "Deploy v2 to staging." → parked: ${ask?.name} asks permission`);
  await b.decide({ sessionId: deploy.sessionId, callId: ask?.callId ?? '', decision: 'allow' });
  console.log(`B: allow ${ask?.name} → B drives the run on`);
  const deployed = await deploy.done;
  const deployFacts = await a.facts(deploy.sessionId);
  console.log(
    `A's handle: ${deployed.status} — "${deployed.text}" (facts written by A: ${by(deployFacts, 'A')}, by B: ${by(deployFacts, 'B')})`,
  );

  // 2. A killed worker's run, finished by another.
  const migrateSession = `migrate-${suffix}`;
  const child = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', migrateSession, executions],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  console.log(`C: a worker in a child process (pid ${child.pid})`);
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('started')) resolve();
    });
  });
  child.kill('SIGKILL');
  const killedAt = Date.now();
  console.log('C: migrate is running — SIGKILL');
  // The takeover commits each started call's tool.indeterminate, then run.recovered: wait for
  // both (a read between the two sees the call pending, and no taker yet).
  let waiting = await a.pending(migrateSession);
  let facts = await a.facts(migrateSession);
  while (waiting.length === 0 || !facts.some((fact) => fact.type === 'run.recovered')) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    waiting = await a.pending(migrateSession);
    facts = await a.facts(migrateSession);
  }
  const taker = facts.find((fact) => fact.type === 'run.recovered')?.workerId;
  console.log(
    `${taker}: took C's run over ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill; ${waiting[0]?.name} may have run: ${waiting[0]?.kind}, waiting for a person`,
  );
  await a.decide({
    sessionId: migrateSession,
    callId: waiting[0]?.callId ?? '',
    decision: 'report-unknown',
  });
  console.log(`A: report-unknown ${waiting[0]?.name}`);
  // The run goes on wherever the lease now is; the log says when it ended.
  let migrated = (await a.facts(migrateSession)).findLast((fact) => fact.type === 'run.ended');
  while (migrated === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    migrated = (await a.facts(migrateSession)).findLast((fact) => fact.type === 'run.ended');
  }
  const runs = readFileSync(executions, 'utf8').trim().split('\n').filter(Boolean).length;
  const status = migrated.type === 'run.ended' ? migrated.status : '';
  console.log(`the run ended ${status}; migrate ran ${runs} time(s), never again after the kill`);
  await Promise.all([a.close(), b.close()]);
  rmSync(scratch, { recursive: true, force: true });
}
