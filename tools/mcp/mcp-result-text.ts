import { canonicalJson } from '../../events/json.ts';
import type { McpCallToolResult } from './mcp-client.ts';

/**
 * The text the model reads for an MCP tool result, built from every content block in order:
 * text as it is; an embedded text resource as a header line and its text; images, audio and
 * binary resources summarized in one bracketed line (their type and size), never dropped;
 * resource links as their URI, name and description; then the structured content as JSON,
 * unless the text already says all of it (see `alreadySaid`). `undefined` when the result holds
 * nothing.
 * Truncation to `toolOutputChars` is the tool runtime's.
 *
 * @example
 * mcpResultText({ content: [{ type: 'text', text: 'Hi' }, { type: 'image', data: 'AAEC', mimeType: 'image/png' }] });
 * // 'Hi\n[image: image/png, 3 bytes, not shown]'
 */
export function mcpResultText(result: McpCallToolResult): string | undefined {
  const content = Array.isArray(result.content) ? result.content : [];
  const parts = content.map(describeBlock);
  if (!Array.isArray(result.content) && result.toolResult !== undefined) {
    parts.push(json(result.toolResult));
  }
  const structured = result.structuredContent;
  if (structured !== undefined && structured !== null && !alreadySaid(structured, content)) {
    parts.push(json(structured));
  }
  return parts.length === 0 ? undefined : parts.join('\n');
}

/**
 * True when the text blocks already say everything the structured content holds: a block with
 * the same JSON (what the spec asks servers to send), or every value of it being a string found
 * in the text (servers that wrap their text as `{ content: text }`, like the filesystem server).
 */
function alreadySaid(structured: unknown, content: unknown[]): boolean {
  const texts = content.flatMap((block) =>
    isRecord(block) && block.type === 'text' && typeof block.text === 'string' ? [block.text] : [],
  );
  if (texts.length === 0) return false;
  const canonical = canonicalJson(structured);
  if (texts.some((text) => sameJson(text, canonical))) return true;
  const values = leaves(structured);
  const all = texts.join('\n');
  return values.every((value) => typeof value === 'string' && all.includes(value));
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
