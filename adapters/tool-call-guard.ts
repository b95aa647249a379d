import { assertNever, type FinishReason, type ToolCallRecord } from '../events/facts.ts';
import type { JsonObject, ProviderOptions } from '../events/json.ts';
import { isCleanFinish, resolveFinishReason } from './finish-reason.ts';

/**
 * What the guard observes of one physical request, in raw stream order. This is turnlog's own
 * shape (no SDK type): the adapter feeds it from the model's stream parts before any SDK
 * translation.
 */
export type GuardEvent =
  | { type: 'tool-input-start'; id: string; toolName: string }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-input-end'; id: string }
  | {
      type: 'tool-call';
      id: string;
      toolName: string;
      /** The provider's projected input: JSON text. Used only by the whole-request fallback. */
      input: string;
      providerOptions?: ProviderOptions;
    }
  | { type: 'finish'; finishReason: FinishReason; outputTokens: number | undefined }
  | { type: 'error' }
  | { type: 'abort' };

/** Options of {@link createToolCallGuard}. */
export interface ToolCallGuardOptions {
  /** The output token limit the request was sent with; reaching it means a possible cut-off. */
  maxOutputTokens: number | undefined;
}

type InputEvent = Extract<
  GuardEvent,
  { type: 'tool-input-start' | 'tool-input-delta' | 'tool-input-end' }
>;
type ResolveEvent = Extract<GuardEvent, { type: 'tool-call' }>;

interface Resolution {
  id: string;
  toolName: string;
  input: string;
  providerOptions: ProviderOptions | undefined;
  endedWhenResolved: boolean;
  duplicate: boolean;
}

type Verdict = { safe: true } | { safe: false; reason: string };

/**
 * Creates the tool-call execution guard for one physical request (architecture/model-adapter.md,
 * "The tool-call guard, as implemented"). A call is proven only when the request finished terminal-safe and the call
 * has raw-bytes, atomic or whole-request proof; every other resolved call is withheld with a
 * sentence telling the model it was not run and why.
 *
 * @example
 * const guard = createToolCallGuard({ maxOutputTokens: undefined });
 * guard.observe({ type: 'tool-input-start', id: 'call_1', toolName: 'readFile' });
 * guard.observe({ type: 'tool-input-delta', id: 'call_1', delta: '{"path":"a.md"}' });
 * guard.observe({ type: 'tool-input-end', id: 'call_1' });
 * guard.observe({ type: 'tool-call', id: 'call_1', toolName: 'readFile', input: '{"path":"a.md"}' });
 * guard.observe({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, outputTokens: 12 });
 * guard.judge(); // [{ callId: 'call_1', name: 'readFile', input: { path: 'a.md' }, proof: 'raw-bytes' }]
 */
export function createToolCallGuard(options: ToolCallGuardOptions): ToolCallGuard {
  return new ToolCallGuard(options);
}

/** One tracker per physical request: observes its stream, then judges every resolved call. */
export class ToolCallGuard {
  readonly #maxOutputTokens: number | undefined;
  readonly #evidence = new Map<string, CallEvidence>();
  readonly #resolutions = new Map<string, Resolution>();
  readonly #finishes: { finishReason: FinishReason; outputTokens: number | undefined }[] = [];
  #toolEvidenceAfterFinish = false;
  #sawError = false;
  #sawAbort = false;

  constructor({ maxOutputTokens }: ToolCallGuardOptions) {
    this.#maxOutputTokens = maxOutputTokens;
  }

  /** Takes one event of the request's stream, in raw stream order. */
  observe(event: GuardEvent): void {
    switch (event.type) {
      case 'tool-input-start':
      case 'tool-input-delta':
      case 'tool-input-end':
        this.#observeInput(event);
        return;
      case 'tool-call':
        this.#observeResolution(event);
        return;
      case 'finish':
        this.#finishes.push({ finishReason: event.finishReason, outputTokens: event.outputTokens });
        return;
      case 'error':
        this.#sawError = true;
        return;
      case 'abort':
        this.#sawAbort = true;
        return;
      default:
        assertNever(event, 'guard event');
    }
  }

  /**
   * One record per resolved call id, in the order the calls resolved. Call after the stream
   * ended; judging earlier withholds everything (no finish yet).
   */
  judge(): ToolCallRecord[] {
    const terminal = this.#terminalVerdict();
    const anyCallStreamedBytes = [...this.#evidence.values()].some((call) => call.bytes.length > 0);
    return [...this.#resolutions.values()].map((resolution) =>
      this.#judgeCall(resolution, terminal, anyCallStreamedBytes),
    );
  }

  #observeInput(event: InputEvent): void {
    if (this.#finishes.length > 0) this.#toolEvidenceAfterFinish = true;
    let call = this.#evidence.get(event.id);
    if (call === undefined) {
      call = new CallEvidence();
      this.#evidence.set(event.id, call);
    }
    call.observe(event);
  }

  #observeResolution(event: ResolveEvent): void {
    if (this.#finishes.length > 0) this.#toolEvidenceAfterFinish = true;
    const known = this.#resolutions.get(event.id);
    if (known !== undefined) {
      known.duplicate = true;
      return;
    }
    const call = this.#evidence.get(event.id);
    if (call !== undefined) call.resolved = true;
    this.#resolutions.set(event.id, {
      id: event.id,
      toolName: event.toolName,
      input: event.input,
      providerOptions: event.providerOptions,
      endedWhenResolved: call?.ended === true,
      duplicate: false,
    });
  }

  /** Whether the request as a whole shows that its calls are complete (checked before any call). */
  #terminalVerdict(): Verdict {
    if (this.#sawAbort) return unsafe('the response was aborted before it finished');
    if (this.#sawError) return unsafe('the provider reported an error during the response');
    const [finish, secondFinish] = this.#finishes;
    if (finish === undefined) {
      return unsafe('the response ended without a finish signal, so the call may be incomplete');
    }
    if (secondFinish !== undefined) return unsafe('the response reported more than one finish');
    if (this.#toolEvidenceAfterFinish)
      return unsafe('tool-call data arrived after the response finished');
    if (!isCleanFinish(finish.finishReason)) {
      const { unified, raw } = resolveFinishReason(finish.finishReason);
      const spelling = raw === undefined || raw === unified ? '' : ` (provider reason "${raw}")`;
      return unsafe(
        `the response finished with reason "${unified}"${spelling}, which does not show that the call is complete`,
      );
    }
    const maxOutputTokens = this.#maxOutputTokens;
    if (maxOutputTokens !== undefined) {
      if (finish.outputTokens === undefined) {
        return unsafe(
          `the provider did not report its output tokens, so a cut-off at the ${maxOutputTokens}-token output limit cannot be ruled out`,
        );
      }
      if (finish.outputTokens >= maxOutputTokens) {
        return unsafe(
          `the response used ${finish.outputTokens} output tokens, reaching the ${maxOutputTokens}-token limit, so it may have been cut off`,
        );
      }
    }
    return { safe: true };
  }

  #judgeCall(
    resolution: Resolution,
    terminal: Verdict,
    anyCallStreamedBytes: boolean,
  ): ToolCallRecord {
    const projected = parseJsonObject(resolution.input);
    if (resolution.duplicate) {
      return withhold(resolution, projected, 'the response completed this call id more than once');
    }
    if (!terminal.safe) return withhold(resolution, projected, terminal.reason);
    const call = this.#evidence.get(resolution.id);
    if (call === undefined) {
      // Rule 4: a provider that delivers calls whole streams no call's bytes at all.
      if (anyCallStreamedBytes) {
        return withhold(
          resolution,
          projected,
          `the response never started a call with id "${resolution.id}"`,
        );
      }
      if (!projected.ok) {
        return withhold(
          resolution,
          projected,
          `its arguments are not a JSON object (${projected.error})`,
        );
      }
      return prove(resolution, resolution.toolName, projected.value, 'whole-request');
    }
    if (call.anomaly !== undefined) return withhold(resolution, projected, call.anomaly);
    const startedName = call.startedName;
    if (startedName === undefined) return withhold(resolution, projected, 'it was never started');
    if (!resolution.endedWhenResolved) {
      return withhold(resolution, projected, 'its input had not ended when it completed');
    }
    if (startedName.toLowerCase() !== resolution.toolName.toLowerCase()) {
      return withhold(
        resolution,
        projected,
        `it started as tool "${startedName}" but completed as tool "${resolution.toolName}"`,
      );
    }
    if (call.bytes.length > 0) {
      // Rule 2: the executed value is parsed from the streamed bytes, never the projection.
      const streamed = parseJsonObject(call.bytes);
      if (!streamed.ok) {
        return withhold(
          resolution,
          projected,
          `its streamed arguments are not a complete JSON object (${streamed.error})`,
        );
      }
      return prove(resolution, startedName, streamed.value, 'raw-bytes');
    }
    // Rule 3: a sibling streamed real bytes, so this provider streams arguments: none means {}.
    if (anyCallStreamedBytes) return prove(resolution, startedName, {}, 'atomic');
    if (!projected.ok) {
      return withhold(
        resolution,
        projected,
        `its arguments are not a JSON object (${projected.error})`,
      );
    }
    return prove(resolution, startedName, projected.value, 'whole-request');
  }
}

/** What the stream showed of one call id before and after it resolved. */
class CallEvidence {
  startedName: string | undefined = undefined;
  bytes = '';
  ended = false;
  resolved = false;
  /** The first ordering or duplication problem, phrased for the model. */
  anomaly: string | undefined = undefined;

  observe(event: InputEvent): void {
    if (this.resolved) this.#flag('parts of it arrived after the call was already complete');
    switch (event.type) {
      case 'tool-input-start':
        if (this.startedName !== undefined) this.#flag('the response started it twice');
        else if (this.ended || this.bytes.length > 0) this.#flag('its parts arrived out of order');
        this.startedName ??= event.toolName;
        return;
      case 'tool-input-delta':
        if (this.startedName === undefined) this.#flag('its arguments arrived before it started');
        if (this.ended) this.#flag('its arguments arrived after its input had ended');
        this.bytes += event.delta;
        return;
      case 'tool-input-end':
        if (this.startedName === undefined) this.#flag('its input ended before it started');
        if (this.ended) this.#flag('its input ended twice');
        this.ended = true;
        return;
      default:
        assertNever(event, 'guard event');
    }
  }

  #flag(anomaly: string): void {
    this.anomaly ??= anomaly;
  }
}

function unsafe(reason: string): Verdict {
  return { safe: false, reason };
}

/** The record of a call that is not run, with a best-effort input for history. */
function withhold(resolution: Resolution, projected: Parsed, reason: string): ToolCallRecord {
  return record({
    callId: resolution.id,
    name: resolution.toolName,
    input: projected.ok ? projected.value : {},
    proof: null,
    withheld: `This call was not run: ${reason}. If you still need it, call the tool again.`,
    providerOptions: resolution.providerOptions,
  });
}

/** The record of a proven call: the name and input it runs with. */
function prove(
  resolution: Resolution,
  name: string,
  input: JsonObject,
  proof: NonNullable<ToolCallRecord['proof']>,
): ToolCallRecord {
  return record({
    callId: resolution.id,
    name,
    input,
    proof,
    providerOptions: resolution.providerOptions,
  });
}

/** Builds a record without `undefined` properties, so it is plain JSON. */
function record(fields: ToolCallRecord): ToolCallRecord {
  const { providerOptions, withheld, ...rest } = fields;
  return {
    ...rest,
    ...(withheld === undefined ? {} : { withheld }),
    ...(providerOptions === undefined ? {} : { providerOptions }),
  };
}

type Parsed = { ok: true; value: JsonObject } | { ok: false; error: string };

/** Parses JSON text that must be a JSON object (not an array, a string or `null`). */
export function parseJsonObject(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      error: `got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}`,
    };
  }
  return { ok: true, value: value as JsonObject };
}
