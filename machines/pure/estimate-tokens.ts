import type { ContentPart, Fact } from '../../events/facts.ts';
import type { PreparedRequest } from './actor-inputs.ts';

/** Characters per token, the rough rule the estimate uses. */
const charsPerToken = 4;

/**
 * Tokens one attached image counts for, whatever its size: about the most a provider bills for
 * one image. Anthropic bills (width × height) / 750 and scales an image down past ~1,600 tokens
 * (1,568 px on its long edge); OpenAI's high detail is 85 + 170 per 512-px tile (765 for
 * 1024 × 1024); Gemini 258 per 768-px tile. Its bytes say little: a 4 MiB photo and a 40 KiB
 * screenshot cost the same once scaled.
 */
export const imageTokens = 1_600;

/**
 * Tokens one page of an attached PDF counts for: Anthropic bills a page as its text plus an image
 * of it, 1,500 to 3,000 tokens; the upper end is counted.
 */
export const pdfPageTokens = 3_000;

/** Bytes of a PDF page when its pages cannot be counted (object streams): ~50 KB a page. */
const pdfBytesPerPage = 50_000;

/**
 * Estimates a request's input tokens (architecture/turn-machine.md, `compacting`): the last step's reported input
 * tokens plus what was added to the history since that step; without a reported step since
 * the last compaction, the whole request. Text counts its characters ÷ 4 (the request's JSON,
 * for the whole request); an attached file (`send({ files })`: `run.started.input.files`, a
 * user message's file parts) counts by `fileTokens`, never by its base64 characters.
 */
export function estimateRequestTokens(facts: readonly Fact[], request: PreparedRequest): number {
  let lastIndex = -1;
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index];
    if (fact?.type === 'compaction.completed') break;
    if (fact?.type === 'step.completed' && fact.usage.inputTokens !== undefined) {
      lastIndex = index;
      break;
    }
  }
  const last = facts[lastIndex];
  if (last?.type !== 'step.completed' || last.usage.inputTokens === undefined) {
    let files = 0;
    // A file part's base64 is counted by fileTokens, not as characters of the JSON.
    const messages = JSON.stringify(request.messages, (_key, value: unknown) => {
      if (!isFilePart(value)) return value;
      files += fileTokens(value);
      return { ...value, data: '' };
    });
    const characters =
      messages.length + (request.system?.length ?? 0) + JSON.stringify(request.tools).length;
    return Math.ceil(characters / charsPerToken) + files;
  }
  let added = 0;
  let files = 0;
  added += contentChars(last.content);
  for (const call of last.toolCalls) added += JSON.stringify(call.input).length;
  for (const fact of facts.slice(lastIndex + 1)) {
    if (fact.type === 'tool.settled') added += fact.text.length;
    else if (fact.type === 'steering.received') added += fact.text.length;
    else if (fact.type === 'run.started') {
      added += fact.input.text.length;
      for (const file of fact.input.files ?? []) files += fileTokens(file);
    } else if (fact.type === 'step.completed') {
      added += contentChars(fact.content);
    }
  }
  return last.usage.inputTokens + Math.ceil(added / charsPerToken) + files;
}

/**
 * The tokens an attached file counts for in the estimate: an image `imageTokens`; a PDF
 * `pdfPageTokens` a page (its `/Type /Page` objects counted, else one page per ~50 KB); anything
 * else (text, JSON, CSV, …) as text, its bytes ÷ 4 (a byte a character).
 */
export function fileTokens(file: { mediaType: string; data: string }): number {
  const mediaType = file.mediaType.toLowerCase();
  if (mediaType.startsWith('image/')) return imageTokens;
  const bytes = base64Bytes(file.data);
  if (mediaType === 'application/pdf') return pdfPages(file.data, bytes) * pdfPageTokens;
  return Math.ceil(bytes / charsPerToken);
}

/** The bytes a base64 text stands for (padding left out). */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** A PDF's pages: its page objects (`/Type /Page`, not `/Pages`), else ~50 KB a page. */
function pdfPages(data: string, bytes: number): number {
  let text = '';
  try {
    text = atob(data); // a byte a character; no Buffer: this module runs in browsers too
  } catch {
    // Not base64 (the runtime checks send()'s files; a log may hold anything): count by size.
  }
  const counted = text.match(/\/Type\s*\/Page(?![A-Za-z])/g)?.length ?? 0;
  return counted > 0 ? counted : Math.max(1, Math.ceil(bytes / pdfBytesPerPage));
}

function isFilePart(value: unknown): value is { type: 'file'; mediaType: string; data: string } {
  const part = value as { type?: unknown; mediaType?: unknown; data?: unknown } | null;
  return (
    typeof part === 'object' &&
    part !== null &&
    part.type === 'file' &&
    typeof part.mediaType === 'string' &&
    typeof part.data === 'string'
  );
}

/** Characters a step's content adds to the history (a provider tool's parts as their JSON). */
function contentChars(content: readonly ContentPart[]): number {
  let characters = 0;
  for (const part of content) {
    characters += 'text' in part ? part.text.length : JSON.stringify(part).length;
  }
  return characters;
}

/** Tokens kept free for the answer when deciding whether to compact. */
export function outputReserve(maxOutputTokens: number | undefined): number {
  return maxOutputTokens ?? 4_096;
}
