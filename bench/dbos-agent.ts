// The DBOS Transact side of the benchmarks (issue 26): the benchmarks' tool conversation written
// as a DBOS workflow, as a DBOS user writes an agent loop: one DBOS step per model call (the AI
// SDK's `streamText` with the tool given without `execute`, so the SDK makes one request and
// runs nothing) and one DBOS step per tool call. The model is the same zero-latency scripted
// model every other side calls; DBOS checkpoints each step's output in its system database
// (`operation_outputs`), the workflow's input and outcome in `workflow_status`.

import type { LanguageModelV4 } from '@ai-sdk/provider';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { type ModelMessage, streamText, tool } from 'ai';
import pg from 'pg';
import { z } from 'zod';
import { addTool, conversationPrompt } from './conversation.ts';

const addInput = z.object({ a: z.number(), b: z.number() });

/** A tool call as the model step returns it (JSON, so DBOS can checkpoint it). */
export interface AgentToolCall {
  toolCallId: string;
  toolName: string;
  input: { a: number; b: number };
}

/** What one model step returns: the response messages and the calls to run. */
interface ModelStepOutput {
  messages: ModelMessage[];
  toolCalls: AgentToolCall[];
}

/** Runs one tool call; the workflow's id and the call's id name it (the campaign's ledger key). */
export type AgentToolExecutor = (call: AgentToolCall, workflowId: string) => Promise<number>;

/** The pure `add` tool, no side effect. */
export const addExecutor: AgentToolExecutor = async (call) => addTool.execute(call.input);

/** One model request through the AI SDK, its stream read to the end. */
async function modelStep(model: LanguageModelV4, messages: ModelMessage[]) {
  const result = streamText({
    model,
    tools: { add: tool({ description: addTool.description, inputSchema: addInput }) },
    messages,
    maxRetries: 0,
  });
  for await (const _part of result.fullStream);
  const [response, toolCalls] = await Promise.all([result.response, result.toolCalls]);
  return {
    messages: response.messages,
    toolCalls: toolCalls.map((call) => ({
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.input as AgentToolCall['input'],
    })),
  } satisfies ModelStepOutput;
}

/**
 * The agent loop: model step, then one step per tool call, until a response without calls or
 * `steps` model steps. `durable` runs each part as a DBOS step (inside a DBOS workflow); without
 * it, the same loop runs plainly in memory (the loop's own cost, for the benchmark's baseline).
 * Returns the model steps it took.
 */
export async function agentLoop(options: {
  model: LanguageModelV4;
  steps: number;
  execute: AgentToolExecutor;
  durable: boolean;
  workflowId?: string;
}): Promise<number> {
  const { model, execute, durable } = options;
  const workflowId = options.workflowId ?? DBOS.workflowID ?? 'memory';
  const messages: ModelMessage[] = [{ role: 'user', content: conversationPrompt }];
  for (let step = 1; step <= options.steps; step += 1) {
    const request = () => modelStep(model, [...messages]);
    const response = durable ? await DBOS.runStep(request, { name: 'model' }) : await request();
    messages.push(...response.messages);
    if (response.toolCalls.length === 0) return step;
    for (const call of response.toolCalls) {
      const run = () => execute(call, workflowId);
      const output = durable ? await DBOS.runStep(run, { name: call.toolName }) : await run();
      messages.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            output: { type: 'json', value: output },
          },
        ],
      });
    }
  }
  return options.steps;
}

/** Where DBOS keeps its system tables: a database of its own on the bench's server. */
export function dbosSystemDatabaseUrl(database: string): string {
  const base = process.env.TURNLOG_BENCH_PG;
  const url = new URL(
    base !== undefined && base !== '' ? base : 'postgres://postgres@127.0.0.1:5432/test',
  );
  url.pathname = `/${database}`;
  return url.toString();
}

/** Creates `database` on the bench's server unless it exists (DBOS's system database). */
async function ensureDatabase(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: dbosSystemDatabaseUrl('postgres') });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
}

/**
 * Registers the agent workflow and launches DBOS (one per process: DBOS is a singleton) on
 * `database`, over a pool whose connections carry `applicationName` (so the benchmark finds
 * their server backends). Launching recovers this executor's pending workflows, as a restarted
 * DBOS application does. Returns the workflow, started by id, and `shutdown`.
 */
export async function launchDbosAgent(options: {
  database: string;
  model: LanguageModelV4;
  execute?: AgentToolExecutor;
  applicationName?: string;
  /** Drop and recreate DBOS's schema first (default false). */
  fresh?: boolean;
}) {
  await ensureDatabase(options.database);
  const pool = new pg.Pool({
    connectionString: dbosSystemDatabaseUrl(options.database),
    max: 10,
    idleTimeoutMillis: 0,
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
  });
  pool.on('error', () => {});
  if (options.fresh === true) await pool.query('DROP SCHEMA IF EXISTS dbos CASCADE');
  const execute = options.execute ?? addExecutor;
  const model = options.model;
  const workflow = DBOS.registerWorkflow(
    (steps: number) => agentLoop({ model, steps, execute, durable: true }),
    { name: 'turnlogBenchAgent' },
  );
  DBOS.setConfig({
    name: 'turnlog-bench',
    systemDatabaseUrl: dbosSystemDatabaseUrl(options.database),
    systemDatabasePool: pool,
    logLevel: 'error',
  });
  await DBOS.launch();
  return {
    /** Runs the conversation as workflow `workflowId` to its end; returns its model steps. */
    async run(workflowId: string, steps: number): Promise<number> {
      const handle = await DBOS.startWorkflow(workflow, { workflowID: workflowId })(steps);
      return handle.getResult();
    },
    /**
     * Waits for workflow `workflowId` to end, starting it if it was never started: one that
     * exists is pending (launch recovered it and runs it) or already ended.
     */
    async ensure(workflowId: string, steps: number): Promise<number> {
      const status = await DBOS.getWorkflowStatus(workflowId);
      if (status === null) return this.run(workflowId, steps);
      return DBOS.retrieveWorkflow<number>(workflowId).getResult();
    },
    async shutdown(): Promise<void> {
      await DBOS.shutdown();
      await pool.end();
    },
  };
}
