import type {
  ModelAdapter,
  ModelStepCompletion,
  ModelStepRequest,
} from '../adapters/model-adapter.ts';
import type { Fact, RequestCapture } from '../events/facts.ts';

/** What the recorded model was asked that the recording has no answer for. */
export interface UnansweredRequest {
  /** The 0-based number of the request in the run. */
  index: number;
  request: RequestCapture;
}

/**
 * A model that plays a run's recorded responses back, one per request, in order: each step's
 * `step.completed` as it was stored (its tool calls with their ids, proofs and inputs), or, for a
 * step that never completed, its last `step.failed`. Requests are described by `base`'s `capture`
 * (the application's own adapter, whose capture is pure), so a request's `inputHash` is the one
 * the application would have sent. A request past the recording fails (not retryable) and is
 * kept in `unanswered`.
 */
export class RecordedModel implements ModelAdapter {
  readonly provider: string;
  readonly modelId: string;
  /** Requests the recording had no response for. */
  readonly unanswered: UnansweredRequest[] = [];
  readonly #base: ModelAdapter;
  readonly #responses: ModelStepCompletion[];
  #next = 0;

  constructor(base: ModelAdapter, runFacts: readonly Fact[]) {
    this.#base = base;
    this.provider = base.provider;
    this.modelId = base.modelId;
    this.#responses = recordedResponses(runFacts);
  }

  capture(request: Omit<ModelStepRequest, 'abortSignal'>): RequestCapture {
    return this.#base.capture(request);
  }

  step(request: ModelStepRequest) {
    const capture = this.capture(request);
    const index = this.#next;
    this.#next += 1;
    let completion = this.#responses[index];
    if (completion === undefined) {
      this.unanswered.push({ index, request: capture });
      completion = {
        type: 'step.failed',
        error: {
          kind: 'bad_request',
          retryable: false,
          message: `replay: the recording has no response for request ${index + 1} (it answered ${this.#responses.length})`,
        },
        observedOutput: false,
      };
    }
    return {
      request: capture,
      events: (async function* () {})(),
      completion: Promise.resolve(completion),
    };
  }
}

/** The run's responses in request order: each step's completion, or its last failure. */
function recordedResponses(runFacts: readonly Fact[]): ModelStepCompletion[] {
  const byStep = new Map<string, ModelStepCompletion>();
  for (const fact of runFacts) {
    if (fact.type === 'step.completed' && byStep.get(fact.stepId)?.type !== 'step.completed') {
      const { finishReason, usage, content, toolCalls, response } = fact;
      byStep.set(fact.stepId, {
        type: 'step.completed',
        finishReason,
        usage,
        content,
        toolCalls,
        response,
      });
    }
    if (fact.type === 'step.failed' && byStep.get(fact.stepId)?.type !== 'step.completed') {
      const { error, observedOutput } = fact;
      byStep.set(fact.stepId, {
        type: 'step.failed',
        error: { ...error, retryable: false },
        observedOutput,
      });
    }
  }
  return [...byStep.values()];
}
