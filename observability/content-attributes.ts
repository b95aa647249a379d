import type { FactOf } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { redactSecrets, type ToolSecrets, withheldNote } from '../tools/tool-output.ts';
import type { Attributes } from './otel-types.ts';

/**
 * The GenAI conventions' opt-in content attributes (`telemetry.recordContent`): what the model was
 * given and said, as JSON text in the conventions' message shape. Whatever came from or goes to a
 * tool call passes through that tool's `secrets` (tools/tool-output.ts); a call whose secrets
 * cannot be read has its arguments withheld, as the log's own texts are.
 */
export const contentAttributes = {
  /** The run's span: the user's message and the system prompt. */
  runInput(fact: FactOf<'run.started'>): Attributes {
    const attributes: Attributes = {
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: fact.input.text }] },
      ]),
    };
    if (fact.system !== undefined) {
      attributes['gen_ai.system_instructions'] = JSON.stringify([
        { type: 'text', content: fact.system },
      ]);
    }
    return attributes;
  },

  /**
   * A step's span: the model's output (text, reasoning, tool calls), redacted with the secrets of
   * the calls it made.
   */
  stepOutput(
    fact: FactOf<'step.completed'>,
    secretsOf: (name: string, input: JsonValue) => ToolSecrets,
  ): Attributes {
    const secrets: string[] = [];
    let withheld: ToolSecrets | undefined;
    for (const call of fact.toolCalls) {
      const found = secretsOf(call.name, call.input);
      if (found.readable) secrets.push(...found.secrets);
      else withheld ??= found;
    }
    if (withheld !== undefined && !withheld.readable) {
      return { 'gen_ai.output.messages': withheldNote('the output is', withheld) };
    }
    const parts = [
      ...fact.content.flatMap((part) =>
        part.type === 'text' || part.type === 'reasoning'
          ? [{ type: part.type, content: part.text }]
          : [],
      ),
      ...fact.toolCalls.map((call) => ({
        type: 'tool_call',
        id: call.callId,
        name: call.name,
        arguments: call.input,
      })),
    ];
    const message = [{ role: 'assistant', parts, finish_reason: fact.finishReason.unified }];
    return { 'gen_ai.output.messages': redactSecrets(JSON.stringify(message), secrets) };
  },

  /** A tool call's span: its arguments. */
  toolArguments(fact: FactOf<'tool.started'>, secrets: ToolSecrets): Attributes {
    return {
      'gen_ai.tool.call.arguments': secrets.readable
        ? redactSecrets(JSON.stringify(fact.input), secrets.secrets)
        : withheldNote('its arguments are', secrets),
    };
  },

  /** A tool call's span: its result, as the model saw it (the settlement's redacted text). */
  toolResult(fact: FactOf<'tool.settled'>, secrets: ToolSecrets): Attributes {
    return {
      'gen_ai.tool.call.result': secrets.readable
        ? redactSecrets(fact.text, secrets.secrets)
        : withheldNote('its result is', secrets),
    };
  },
};
