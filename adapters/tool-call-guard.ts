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

/** One tracker per physical request: observes its stream, then judges every resolved call. */
export interface ToolCallGuard {
  observe(event: GuardEvent): void;
  /**
   * One record per resolved call id, in the order the calls resolved. Call after the stream
   * ended; judging earlier withholds everything (no finish yet).
   */
  judge(): ToolCallRecord[];
}

/** Options of {@link createToolCallGuard}. */
export interface ToolCallGuardOptions {
  /** The output token limit the request was sent with; reaching it means a possible cut-off. */
  maxOutputTokens: number | undefined;
}

interface CallEvidence {
  startedName: string | undefined;
  bytes: string;
  ended: boolean;
  resolved: boolean;
  /** The first ordering or duplication problem, phrased for the model. */
  anomaly: string | undefined;
}

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
export function createToolCallGuard({ maxOutputTokens }: ToolCallGuardOptions): ToolCallGuard {
  const evidence = new Map<string, CallEvidence>();
  const resolutions = new Map<string, Resolution>();
  const finishes: { finishReason: FinishReason; outputTokens: number | undefined }[] = [];
  let toolEvidenceAfterFinish = false;
  let sawError = false;
  let sawAbort = false;

  function evidenceFor(id: string): CallEvidence {
    let call = evidence.get(id);
    if (call === undefined) {
      call = {
        startedName: undefined,
        bytes: '',
        ended: false,
        resolved: false,
        anomaly: undefined,
      };
      evidence.set(id, call);
    }
    return call;
  }

  function flag(call: CallEvidence, anomaly: string): void {
    call.anomaly ??= anomaly;
  }

  function observeToolEvidence(event: Extract<GuardEvent, { id: string }>): void {
    if (finishes.length > 0) toolEvidenceAfterFinish = true;
    if (event.type === 'tool-call') {
      const known = resolutions.get(event.id);
      if (known !== undefined) {
        known.duplicate = true;
        return;
      }
      const call = evidence.get(event.id);
      if (call !== undefined) call.resolved = true;
      resolutions.set(event.id, {
        id: event.id,
        toolName: event.toolName,
        input: event.input,
        providerOptions: event.providerOptions,
        endedWhenResolved: call?.ended === true,
        duplicate: false,
      });
      return;
    }
    const call = evidenceFor(event.id);
    if (call.resolved) flag(call, 'parts of it arrived after the call was already complete');
    switch (event.type) {
      case 'tool-input-start':
        if (call.startedName !== undefined) flag(call, 'the response started it twice');
        else if (call.ended || call.bytes.length > 0) flag(call, 'its parts arrived out of order');
        call.startedName ??= event.toolName;
        return;
      case 'tool-input-delta':
        if (call.startedName === undefined) flag(call, 'its arguments arrived before it started');
        if (call.ended) flag(call, 'its arguments arrived after its input had ended');
        call.bytes += event.delta;
        return;
      case 'tool-input-end':
        if (call.startedName === undefined) flag(call, 'its input ended before it started');
        if (call.ended) flag(call, 'its input ended twice');
        call.ended = true;
        return;
      default:
        assertNever(event, 'guard event');
    }
  }

  function terminalVerdict(): Verdict {
    if (sawAbort) return unsafe('the response was aborted before it finished');
    if (sawError) return unsafe('the provider reported an error during the response');
    const [finish, secondFinish] = finishes;
    if (finish === undefined) {
      return unsafe('the response ended without a finish signal, so the call may be incomplete');
    }
    if (secondFinish !== undefined) return unsafe('the response reported more than one finish');
    if (toolEvidenceAfterFinish)
      return unsafe('tool-call data arrived after the response finished');
    if (!isCleanFinish(finish.finishReason)) {
      const { unified, raw } = resolveFinishReason(finish.finishReason);
      const spelling = raw === undefined || raw === unified ? '' : ` (provider reason "${raw}")`;
      return unsafe(
        `the response finished with reason "${unified}"${spelling}, which does not show that the call is complete`,
      );
    }
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

  function judgeCall(
    resolution: Resolution,
    terminal: Verdict,
    anyCallStreamedBytes: boolean,
  ): ToolCallRecord {
    const projected = parseJsonObject(resolution.input);
    const withhold = (reason: string): ToolCallRecord =>
      record({
        callId: resolution.id,
        name: resolution.toolName,
        input: projected.ok ? projected.value : {},
        proof: null,
        withheld: `This call was not run: ${reason}. If you still need it, call the tool again.`,
        providerOptions: resolution.providerOptions,
      });
    const prove = (
      name: string,
      input: JsonObject,
      proof: NonNullable<ToolCallRecord['proof']>,
    ): ToolCallRecord =>
      record({
        callId: resolution.id,
        name,
        input,
        proof,
        providerOptions: resolution.providerOptions,
      });

    if (resolution.duplicate) return withhold('the response completed this call id more than once');
    if (!terminal.safe) return withhold(terminal.reason);
    const call = evidence.get(resolution.id);
    if (call === undefined) {
      // Rule 4: a provider that delivers calls whole streams no call's bytes at all.
      if (anyCallStreamedBytes) {
        return withhold(`the response never started a call with id "${resolution.id}"`);
      }
      if (!projected.ok)
        return withhold(`its arguments are not a JSON object (${projected.error})`);
      return prove(resolution.toolName, projected.value, 'whole-request');
    }
    if (call.anomaly !== undefined) return withhold(call.anomaly);
    const startedName = call.startedName;
    if (startedName === undefined) return withhold('it was never started');
    if (!resolution.endedWhenResolved) return withhold('its input had not ended when it completed');
    if (startedName.toLowerCase() !== resolution.toolName.toLowerCase()) {
      return withhold(
        `it started as tool "${startedName}" but completed as tool "${resolution.toolName}"`,
      );
    }
    if (call.bytes.length > 0) {
      // Rule 2: the executed value is parsed from the streamed bytes, never the projection.
      const streamed = parseJsonObject(call.bytes);
      if (!streamed.ok) {
        return withhold(
          `its streamed arguments are not a complete JSON object (${streamed.error})`,
        );
      }
      return prove(startedName, streamed.value, 'raw-bytes');
    }
    // Rule 3: a sibling streamed real bytes, so this provider streams arguments: none means {}.
    if (anyCallStreamedBytes) return prove(startedName, {}, 'atomic');
    if (!projected.ok) return withhold(`its arguments are not a JSON object (${projected.error})`);
    return prove(startedName, projected.value, 'whole-request');
  }

  return {
    observe(event) {
      switch (event.type) {
        case 'tool-input-start':
        case 'tool-input-delta':
        case 'tool-input-end':
        case 'tool-call':
          observeToolEvidence(event);
          return;
        case 'finish':
          finishes.push({ finishReason: event.finishReason, outputTokens: event.outputTokens });
          return;
        case 'error':
          sawError = true;
          return;
        case 'abort':
          sawAbort = true;
          return;
        default:
          assertNever(event, 'guard event');
      }
    },
    judge() {
      const terminal = terminalVerdict();
      const anyCallStreamedBytes = [...evidence.values()].some((call) => call.bytes.length > 0);
      return [...resolutions.values()].map((resolution) =>
        judgeCall(resolution, terminal, anyCallStreamedBytes),
      );
    },
  };
}

function unsafe(reason: string): Verdict {
  return { safe: false, reason };
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
