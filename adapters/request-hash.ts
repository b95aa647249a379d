import { createHash, type Hash } from 'node:crypto';
import { hashText } from '../events/json.ts';
import { samePrefixLength } from './same-prefix.ts';

/** The SHA-256 state of one request's JSON up to the end of the messages hashed so far. */
interface Hashed {
  /** The JSON before the first message: `{"system":"…","messages":[`. */
  prefix: string;
  state: Hash;
  /** The messages hashed into `state`, in order (the very objects). */
  messages: unknown[];
}

/**
 * Hashes request bodies exactly as `hashText(JSON.stringify(body))` does, without serializing
 * the whole history every step. Requests of a session grow at the end: each request carries
 * the previous one's messages (the same objects, from the run's history projection) and a few
 * more. The hasher keeps the SHA-256 state after the last message it hashed, keyed by the first
 * message object; a request that starts with those same message objects only serializes and
 * hashes its new messages, then a copy of the state takes the rest of the JSON. Anything else
 * (another first message, a message replaced, other keys before `messages`) hashes from the
 * start. The recorded `inputHash` keeps its meaning: the hash of the body's JSON.
 *
 * @example
 * const hashRequest = createRequestHasher();
 * hashRequest({ system, messages, tools }) === hashText(JSON.stringify({ system, messages, tools }));
 */
export function createRequestHasher(): (body: Record<string, unknown>) => string {
  const byFirstMessage = new WeakMap<object, Hashed>();

  return (body) => {
    const messages = body.messages;
    const first: unknown = Array.isArray(messages) ? messages[0] : undefined;
    if (!Array.isArray(messages) || typeof first !== 'object' || first === null) {
      return hashText(JSON.stringify(body));
    }
    const { prefix, suffix } = around(body);
    let hashed = byFirstMessage.get(first);
    if (
      hashed === undefined ||
      hashed.prefix !== prefix ||
      samePrefixLength(messages, hashed.messages) < hashed.messages.length
    ) {
      hashed = { prefix, state: createHash('sha256').update(prefix), messages: [] };
      byFirstMessage.set(first, hashed);
    }
    for (let index = hashed.messages.length; index < messages.length; index += 1) {
      const message: unknown = messages[index];
      // As JSON.stringify writes an array: commas between, `null` for what has no JSON.
      hashed.state.update(`${index > 0 ? ',' : ''}${JSON.stringify(message) ?? 'null'}`);
      hashed.messages.push(message);
    }
    const digest = hashed.state.copy().update(suffix).digest('hex');
    return `sha256:${digest.slice(0, 32)}`;
  };
}

/** The body's JSON before its first message and after its last, as `JSON.stringify` writes it. */
function around(body: Record<string, unknown>): { prefix: string; suffix: string } {
  const before: string[] = [];
  const after: string[] = [];
  let seen = false;
  for (const key of Object.keys(body)) {
    if (key === 'messages') {
      seen = true;
      continue;
    }
    const json = JSON.stringify(body[key]);
    // JSON.stringify leaves out a property whose value has no JSON (undefined, a function).
    if (json === undefined) continue;
    (seen ? after : before).push(`${JSON.stringify(key)}:${json}`);
  }
  before.push('"messages":[');
  return {
    prefix: `{${before.join(',')}`,
    suffix: `]${after.map((part) => `,${part}`).join('')}}`,
  };
}
