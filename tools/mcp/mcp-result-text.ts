import { canonicalJson } from '../../events/json.ts';
import type { McpCallToolResult } from './mcp-client.ts';

/**
 * The text the model reads for an MCP tool result, built from every content block in order:
 * text as it is; an embedded text resource as a header line and its text; images, audio and
 * binary resources summarized in one bracketed line (their type and size), never dropped;
 * resource links as their URI, name and description; then the structured content as JSON,
 * unless the blocks already say all of it (see `alreadySaid`). `undefined` when the result
 * holds nothing.
 *
 * No base64 of an image, audio or blob reaches the text, however the server repeats it: wherever
 * a block's data shows up again (in `structuredContent`, as the filesystem server's
 * `read_media_file` sends it, in a text block, in `toolResult`) it is replaced by the block's
 * summary, and a string of structured content that is base64 of `minBase64Chars` or more (a
 * `data:` URL too) by `[base64 data, N bytes, not shown]`.
 * Truncation to `toolOutputChars` is the tool runtime's.
 *
 * @example
 * mcpResultText({ content: [{ type: 'text', text: 'Hi' }, { type: 'image', data: 'AAEC', mimeType: 'image/png' }] });
 * // 'Hi\n[image: image/png, 3 bytes, not shown]'
 */
export function mcpResultText(result: McpCallToolResult): string | undefined {
  const content = Array.isArray(result.content) ? result.content : [];
  const binary = new BinaryPayloads(content);
  const parts = content.map((block) => binary.scrubText(describeBlock(block)));
  if (!Array.isArray(result.content) && result.toolResult !== undefined) {
    parts.push(json(binary.scrubValue(result.toolResult)));
  }
  const structured = result.structuredContent;
  if (structured !== undefined && structured !== null) {
    const shown = binary.scrubValue(structured);
    if (!alreadySaid(shown, content, parts)) parts.push(json(shown));
  }
  return parts.length === 0 ? undefined : parts.join('\n');
}

/** The shortest base64 string of structured content that is taken for binary data. */
export const minBase64Chars = 1_024;

/** Shorter block data is only replaced where it is a whole string, never inside text. */
const minPayloadChars = 64;

const base64Blob = /^(?:data:[^,;]*(?:;[^,;]*)*;base64,)?[A-Za-z0-9+/_\-\r\n]+={0,2}\s*$/;

/** The base64 data of a result's image, audio and blob blocks, and how each is summarized. */
class BinaryPayloads {
  readonly #summaries = new Map<string, string>();
  /** Longest first, so that one payload inside another is replaced with the outer one. */
  readonly #long: string[];

  constructor(content: unknown[]) {
    for (const block of content) {
      if (!isRecord(block)) continue;
      const resource = isRecord(block.resource) ? block.resource : undefined;
      const data = block.type === 'image' || block.type === 'audio' ? block.data : resource?.blob;
      if (typeof data === 'string' && data !== '') this.#summaries.set(data, describeBlock(block));
    }
    this.#long = [...this.#summaries.keys()]
      .filter((data) => data.length >= minPayloadChars)
      .sort((a, b) => b.length - a.length);
  }

  /** `text` with every repeated payload replaced by its block's summary. */
  scrubText(text: string): string {
    let result = text;
    for (const data of this.#long) {
      if (result.includes(data)) result = result.split(data).join(this.#summaries.get(data));
    }
    return result;
  }

  /** A copy of a JSON value whose strings are scrubbed, and base64 blobs summarized. */
  scrubValue(value: unknown): unknown {
    if (typeof value === 'string') {
      const summary = this.#summaries.get(value);
      if (summary !== undefined) return summary;
      const scrubbed = this.scrubText(value);
      if (scrubbed.length < minBase64Chars || !base64Blob.test(scrubbed)) return scrubbed;
      const data = scrubbed.slice(scrubbed.indexOf(',') + 1).replace(/\s/g, '');
      return `[base64 data, ${sizeOf(data)}, not shown]`;
    }
    if (Array.isArray(value)) return value.map((item) => this.scrubValue(item));
    if (!isRecord(value)) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, this.scrubValue(item)]),
    );
  }
}

/**
 * True when the blocks already say everything the structured content holds: a text block with
 * the same JSON (what the spec asks servers to send), or every value of it being a string found
 * in what the blocks say (servers that wrap their text as `{ content: text }`, like the
 * filesystem server, or repeat their image blocks, scrubbed to the same summaries).
 */
function alreadySaid(structured: unknown, content: unknown[], said: string[]): boolean {
  if (said.length === 0) return false;
  const texts = content.flatMap((block) =>
    isRecord(block) && block.type === 'text' && typeof block.text === 'string' ? [block.text] : [],
  );
  const canonical = canonicalJson(structured);
  if (texts.some((text) => sameJson(text, canonical))) return true;
  const all = said.join('\n');
  return leaves(structured).every((value) => typeof value === 'string' && all.includes(value));
}

/** Every value in a JSON value that is not an object or an array. */
function leaves(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (isRecord(value)) return Object.values(value).flatMap(leaves);
  return [value];
}

function describeBlock(block: unknown): string {
  if (!isRecord(block)) return `[a content block that is not an object: ${json(block)}]`;
  switch (block.type) {
    case 'text':
      return String(block.text ?? '');
    case 'image':
    case 'audio':
      return `[${block.type}: ${mimeOf(block)}, ${sizeOf(block.data)}, not shown]`;
    case 'resource': {
      const resource = isRecord(block.resource) ? block.resource : {};
      const header = `[resource: ${String(resource.uri ?? '(no uri)')}, ${mimeOf(resource)}`;
      if (typeof resource.text === 'string') return `${header}]\n${resource.text}`;
      return `${header}, ${sizeOf(resource.blob)}, not shown]`;
    }
    case 'resource_link': {
      const name = block.title ?? block.name;
      const details = [
        typeof name === 'string' && name !== block.uri ? JSON.stringify(name) : undefined,
        typeof block.mimeType === 'string' ? block.mimeType : undefined,
        typeof block.size === 'number' ? `${block.size} bytes` : undefined,
      ].filter((detail) => detail !== undefined);
      const description = typeof block.description === 'string' ? ` ${block.description}` : '';
      return `[resource link: ${String(block.uri ?? '(no uri)')}${details.map((detail) => `, ${detail}`).join('')}]${description}`;
    }
    default:
      return `[${json(block.type)} content, not shown]`;
  }
}

function mimeOf(block: Record<string, unknown>): string {
  return typeof block.mimeType === 'string' ? block.mimeType : 'unknown type';
}

/** The decoded size of base64 data. */
function sizeOf(data: unknown): string {
  if (typeof data !== 'string') return 'size unknown';
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return `${Math.max(0, Math.floor((data.length * 3) / 4) - padding)} bytes`;
}

function sameJson(text: unknown, canonical: string): boolean {
  if (typeof text !== 'string') return false;
  try {
    return canonicalJson(JSON.parse(text)) === canonical;
  } catch {
    return false;
  }
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
