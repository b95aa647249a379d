import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { toUIMessages } from '../../adapters/ui/ui-message-stream.ts';
import { hashJson } from '../../events/json.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { Tool } from '../../tools/tool.ts';
import { readSecrets, redactSecrets, secretForms } from '../../tools/tool-output.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import {
  allowDecision,
  createToolLog,
  deferred,
  provenCall,
  settleCall,
} from './helpers/tool-log.ts';

afterEach(() => {
  vi.useRealTimers();
});

/** The API key a tool knows from its closure, as tools usually do. */
const apiKey = 'sk-live-0123456789';

/** Settles one call of `tool` (decide, then run with the decision in the log). */
async function settleOne(tool: Tool, input: Record<string, unknown> = {}) {
  const runtime = createCallSettler({ tools: { api: tool } });
  const log = createToolLog();
  const call = provenCall('api', input as never);
  await log.completeStep('step_1', [call]);
  await settleCall(runtime, log, 'step_1', call);
  return { log, settled: log.ofType('tool.settled') };
}

/** Starts running one allowed call of `tool` with input `{}`; `running` settles it. */
async function startAllowed(tool: Tool) {
  const runtime = createCallSettler({ tools: { api: tool } });
  const log = createToolLog();
  const call = provenCall('api', {});
  const context = await log.completeStep('step_1', [call]);
  return { log, running: runtime.run(call, allowDecision(hashJson({})), context) };
}

const unreadable: Array<[string, () => unknown, string]> = [
  [
    'throws',
    () => {
      throw new Error(`vault refused ${apiKey}`);
    },
    'secrets() threw',
  ],
  ['returns a string', () => apiKey, 'secrets() returned a string, not an array'],
  [
    'returns a number in the array',
    () => [apiKey, 42],
    'secrets() returned an array holding a number, not only strings',
  ],
];

describe('a tool whose secrets cannot be read fails closed', () => {
  it.each(unreadable)(
    'secrets() %s: a returned value settles as error and is never recorded',
    async (_label, secrets, problem) => {
      const execute = vi.fn(() => ({ token: apiKey, rows: 3 }));
      const tool = defineTool({
        description: 'Calls an API',
        inputSchema: z.object({}),
        secrets: secrets as () => string[],
        execute,
      });
      const { log, settled } = await settleOne(tool);
      expect(execute).toHaveBeenCalledTimes(1);
      expect(settled).toHaveLength(1);
      expect(settled[0]).toMatchObject({
        outcome: 'error',
        text: `The tool ran, but its result is withheld: without the tool's secrets (${problem}) nothing can be redacted. It may have changed things; inspect the current state before retrying.`,
        truncated: false,
      });
      expect(settled[0]?.output).toBeUndefined();
      expect(JSON.stringify(log.facts())).not.toContain(apiKey);
    },
  );

  it.each(unreadable)(
    'secrets() %s: a thrown message is withheld',
    async (_label, secrets, problem) => {
      const tool = defineTool({
        description: 'Calls an API',
        inputSchema: z.object({}),
        secrets: secrets as () => string[],
        execute: () => {
          throw new Error(`request with key ${apiKey} was refused`);
        },
      });
      const { log, settled } = await settleOne(tool);
      expect(settled).toMatchObject([
        {
          outcome: 'error',
          text: `The tool failed: (its message is withheld: without the tool's secrets (${problem}) nothing can be redacted)`,
        },
      ]);
      expect(JSON.stringify(log.facts())).not.toContain(apiKey);
    },
  );

  it('withholds the message of a throw after stop as well', async () => {
    const started = deferred();
    const tool = defineTool({
      description: 'Stops',
      inputSchema: z.object({}),
      secrets: () => {
        throw new Error('no vault');
      },
      execute: (_input, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(new Error(`aborted with ${apiKey}`)));
          started.resolve();
        }),
    });
    const { log, running } = await startAllowed(tool);
    await started.promise;
    log.controller.abort('stop');
    await running;
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'cancelled',
        text: "The run was stopped while this call was running; the tool ended with: (its message is withheld: without the tool's secrets (secrets() threw) nothing can be redacted). It may have partly run; inspect the current state before retrying.",
      },
    ]);
  });

  it('keeps the timeout text, which holds nothing from the tool', async () => {
    vi.useFakeTimers();
    const tool = defineTool({
      description: 'Hangs',
      inputSchema: z.object({}),
      timeoutMs: 50,
      secrets: () => {
        throw new Error('no vault');
      },
      execute: () => new Promise(() => {}),
    });
    const { log, running } = await startAllowed(tool);
    await vi.advanceTimersByTimeAsync(50);
    await running;
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'error',
        text: 'The tool did not finish within its timeout of 50 ms and was abandoned. It may have partly run; inspect the current state before retrying.',
      },
    ]);
  });
});

describe("a schema's or a tool's error message is redacted before it is recorded", () => {
  const secrets = () => [apiKey];

  it('a throwing permission function', async () => {
    const tool = defineTool({
      description: 'Checks a quota',
      inputSchema: z.object({}),
      secrets,
      permission: () => {
        throw new Error(`quota service refused ${apiKey}`);
      },
      execute: () => 'ok',
    });
    const { settled } = await settleOne(tool);
    expect(settled).toMatchObject([
      {
        outcome: 'error',
        text: 'The permission check for this call failed (quota service refused [redacted]); it was not run.',
      },
    ]);
  });

  it('a schema that throws, with its secrets read from the raw input', async () => {
    const tool = defineTool({
      description: 'Signs a request',
      inputSchema: z.object({ token: z.string() }).transform((): { token: string } => {
        throw new Error(`cannot sign with ${apiKey}`);
      }),
      secrets: ({ token }) => [apiKey, token],
      execute: () => 'ok',
    });
    const { settled } = await settleOne(tool, { token: 'tok' });
    expect(settled).toMatchObject([
      {
        outcome: 'error',
        text: 'The input of tool "api" could not be validated (its schema threw: cannot sign with [redacted]). The call was not run.',
      },
    ]);
  });

  /** A tool whose schema's refinement message holds the key. */
  const regionTool = (readSecrets: (input: { region: string }) => string[]) =>
    defineTool({
      description: 'Needs a region',
      inputSchema: z.object({
        region: z.string().refine((region) => region === 'eu', {
          message: `the key ${apiKey} works in "eu" only`,
        }),
        count: z.number(),
      }),
      secrets: readSecrets,
      execute: () => 'ok',
    });

  it("a schema's issue messages", async () => {
    const { settled } = await settleOne(regionTool(secrets), { region: 'us', count: 1 });
    expect(settled).toMatchObject([
      {
        outcome: 'invalid',
        text: 'Invalid input for tool "api"; the call was not run. Fix these fields and call it again:\n- region: the key [redacted] works in "eu" only',
      },
    ]);
  });

  it("withholds a schema's messages when the secrets cannot be read, naming the fields", async () => {
    const tool = regionTool(({ region }) => [region.toUpperCase(), apiKey]);
    // The raw input has no region: secrets() throws on it.
    const { log, settled } = await settleOne(tool, { count: 'two' });
    expect(settled).toMatchObject([
      {
        outcome: 'invalid',
        text: 'Invalid input for tool "api"; the call was not run. Fix these fields and call it again (the schema\'s messages are withheld: without the tool\'s secrets (secrets() threw) nothing can be redacted):\n- region\n- count',
      },
    ]);
    expect(JSON.stringify(log.facts())).not.toContain(apiKey);
  });
});

describe('readSecrets', () => {
  it('keeps strings and reads undefined and null items as no secret', () => {
    expect(readSecrets(() => ['a', undefined, null, 'b'])).toEqual({
      readable: true,
      secrets: ['a', 'b'],
    });
    expect(readSecrets(() => [])).toEqual({ readable: true, secrets: [] });
  });

  it('refuses what is not an array of strings, without keeping a thrown message', () => {
    expect(readSecrets(() => undefined)).toEqual({
      readable: false,
      problem: 'secrets() returned undefined, not an array',
    });
    expect(readSecrets(() => ({ key: 'x' }))).toEqual({
      readable: false,
      problem: 'secrets() returned an object, not an array',
    });
    expect(
      readSecrets(() => {
        throw new Error(apiKey);
      }),
    ).toEqual({ readable: false, problem: 'secrets() threw' });
  });
});

/** Characters secrets hold in the wild (a PEM key, a JSON token) and those JSON escapes. */
const secretUnit = fc.oneof(
  fc.constantFrom('"', '\\', '\n', '\r', '\t', '\u0000', '\u001f', '\u2028', '/', "'", '[', ']'),
  fc.constantFrom('😀', '𝄞', '\u{1F511}'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);

/** Random secrets; the fixed core keeps them apart from every text the runtime writes itself. */
const randomSecret = fc
  .tuple(
    fc.string({ unit: secretUnit, maxLength: 8 }),
    fc.string({ unit: secretUnit, minLength: 1, maxLength: 8 }),
  )
  .map(([head, tail]) => `${head}K€y${tail}`);

/** What the tool does with the secret it knows. */
const leakShapes = {
  'returns it in a string': (secret: string) => ({ returns: `token: ${secret}.` }),
  'returns it as a value': (secret: string) => ({ returns: { token: secret, rows: [1, secret] } }),
  'returns it as a key': (secret: string) => ({ returns: { [secret]: true } }),
  'returns JSON text holding it': (secret: string) => ({
    returns: { body: JSON.stringify({ auth: { token: secret } }) },
  }),
  'throws it in a message': (secret: string) => ({ throws: new Error(`refused ${secret}`) }),
  'throws JSON holding it': (secret: string) => ({
    throws: new Error(`refused: ${JSON.stringify({ token: secret })}`),
  }),
  'throws an object holding it': (secret: string) => ({ throws: { code: 401, token: secret } }),
};

/** True when `value` holds the secret, as it is or escaped, anywhere in its JSON. */
function holdsSecret(value: unknown, secret: string): boolean {
  const json = JSON.stringify(value) ?? '';
  return secretForms([secret]).some((form) => json.includes(form));
}

describe('a secret holding quotes, backslashes, control or non-BMP characters', () => {
  it('reaches neither tool.settled, the next request nor the UI messages, in any shape', async () => {
    await fc.assert(
      fc.asyncProperty(
        randomSecret,
        fc.constantFrom(...(Object.keys(leakShapes) as (keyof typeof leakShapes)[])),
        async (secret, shape) => {
          const leak = leakShapes[shape](secret);
          const tool = defineTool({
            description: 'Calls an API',
            inputSchema: z.object({}),
            secrets: () => [secret],
            execute: () => {
              if ('throws' in leak) throw leak.throws;
              return leak.returns;
            },
          });
          const model = scriptedModel([{ toolCalls: [{ name: 'api' }] }, { text: 'Done.' }]);
          const runtime = testRuntime(memoryStore(), { model, tools: { api: tool } });
          const turn = await runtime.send({ sessionId: 's', text: 'Go' });
          expect((await turn.done).status).toBe('completed');
          const facts = await runtime.facts('s');
          await runtime.close();
          const [settled, ...others] = facts.filter((fact) => fact.type === 'tool.settled');
          expect(others).toHaveLength(0);
          expect(settled?.outcome).toBe('throws' in leak ? 'error' : 'success');
          expect(settled?.text).toContain('[redacted]');
          expect(holdsSecret(settled?.text, secret)).toBe(false);
          expect(holdsSecret(settled?.output ?? null, secret)).toBe(false);
          expect(model.requests).toHaveLength(2);
          expect(holdsSecret(model.requests[1]?.prompt, secret)).toBe(false);
          expect(holdsSecret(toUIMessages(facts), secret)).toBe(false);
          expect(holdsSecret(facts, secret)).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is redacted when it spans two values of the returned JSON', async () => {
    const secret = 'ab","b":"cd';
    const tool = defineTool({
      description: 'Calls an API',
      inputSchema: z.object({}),
      secrets: () => [secret],
      execute: () => ({ a: 'ab', b: 'cd', c: 1 }),
    });
    const { settled } = await settleOne(tool);
    expect(settled).toMatchObject([{ outcome: 'success', text: '{"a":"[redacted]","c":1}' }]);
    expect(settled[0]?.output).toBeUndefined();
  });

  it('blanks the whole text when the redaction itself would spell the secret again', () => {
    // "d]x" appears again once "d]d]xx"'s inner "d]x" becomes "[redacted]": "d][redacted]x".
    expect(redactSecrets('d]d]xx', ['d]x'])).toBe('[redacted]');
    expect(redactSecrets('a "quoted" key', ['"quoted"'])).toBe('a [redacted] key');
  });
});
