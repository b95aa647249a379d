import type {
  Attributes,
  Counter,
  Histogram,
  Meter,
  ObservableResult,
  ObservableUpDownCounter,
} from './otel-types.ts';

/**
 * Where a run is, as the `turnlog.runs` instrument counts it in this process: `running` (driven
 * here), `parked` (dropped until something arrives for it), `waiting_for_person` (parked on a
 * decision only a person makes: `runtime.decide()`).
 */
export type RunState = 'running' | 'parked' | 'waiting_for_person';

const runStates: readonly RunState[] = ['running', 'parked', 'waiting_for_person'];

/** The GenAI conventions' metric attributes of one model, kept so a step records no new object. */
export interface ModelAttributes {
  provider: string;
  model: string;
  chat: Attributes;
  input: Attributes;
  output: Attributes;
  completed: Attributes;
}

/**
 * A runtime's instruments (architecture/observability.md, "Metrics"). The GenAI semantic
 * conventions' `gen_ai.client.operation.duration` and `gen_ai.client.token.usage` for steps, and
 * turnlog's own. Attribute sets are made once per model, tool and outcome and reused, so recording
 * a fact allocates nothing.
 */
export class RunMetrics {
  readonly steps: Counter;
  readonly stepDuration: Histogram;
  readonly tokens: Histogram;
  readonly toolDuration: Histogram;
  readonly retries: Counter;
  readonly recoveries: Counter;
  readonly takeovers: Counter;
  readonly renewalsMissed: Counter;
  readonly appendDuration: Histogram;
  readonly #runs: ObservableUpDownCounter;
  readonly #countRuns: (result: ObservableResult) => void;
  readonly #toolAttributes = new Map<string, Map<string, Attributes>>();
  readonly #failedAttributes = new Map<string, Attributes>();

  constructor(meter: Meter, runStates: () => Iterable<RunState>) {
    this.steps = meter.createCounter('turnlog.steps', {
      description: 'Provider steps that ended (completed or failed)',
      unit: '{step}',
    });
    this.stepDuration = meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration: one provider step, from step.started to its end',
      unit: 's',
    });
    this.tokens = meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Tokens used per step, by gen_ai.token.type',
      unit: '{token}',
    });
    this.toolDuration = meter.createHistogram('turnlog.tool.duration', {
      description: 'How long a tool call executed (tool.settled.durationMs)',
      unit: 's',
    });
    this.retries = meter.createCounter('turnlog.retries', {
      description: 'Step retries (retry.due)',
      unit: '{retry}',
    });
    this.recoveries = meter.createCounter('turnlog.recoveries', {
      description: 'Runs resumed after their process stopped (run.recovered)',
      unit: '{recovery}',
    });
    this.takeovers = meter.createCounter('turnlog.takeovers', {
      description: 'Runs recovered by a worker other than the one whose lease they were under',
      unit: '{takeover}',
    });
    this.renewalsMissed = meter.createCounter('turnlog.lease.renewals_missed', {
      description: 'Leases a renewal did not renew: found lost, or the renewal failed',
      unit: '{lease}',
    });
    this.appendDuration = meter.createHistogram('turnlog.append.duration', {
      description: "One append of a run's facts to the store (one durable write)",
      unit: 's',
    });
    this.#runs = meter.createObservableUpDownCounter('turnlog.runs', {
      description: 'Runs this process holds, by turnlog.run.state',
      unit: '{run}',
    });
    this.#countRuns = (result) => {
      const counts = new Map<RunState, number>(runStatesZero());
      for (const state of runStates()) counts.set(state, (counts.get(state) ?? 0) + 1);
      for (const [state, count] of counts) result.observe(count, stateAttributes[state]);
    };
    this.#runs.addCallback(this.#countRuns);
  }

  /** The attribute sets of steps of one model. */
  modelAttributes(provider: string, model: string): ModelAttributes {
    const base = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': provider,
      'gen_ai.request.model': model,
    };
    return {
      provider,
      model,
      chat: base,
      input: { ...base, 'gen_ai.token.type': 'input' },
      output: { ...base, 'gen_ai.token.type': 'output' },
      completed: { ...base, 'turnlog.step.outcome': 'completed' },
    };
  }

  /** The attribute set of a failed step of one model, by the failure's kind. */
  failedAttributes(model: ModelAttributes, kind: string): Attributes {
    const key = `${model.provider}\u0000${model.model}\u0000${kind}`;
    let attributes = this.#failedAttributes.get(key);
    if (attributes === undefined) {
      attributes = { ...model.chat, 'turnlog.step.outcome': 'failed', 'error.type': kind };
      this.#failedAttributes.set(key, attributes);
    }
    return attributes;
  }

  /** The attribute set of a tool's settlement. */
  toolAttributes(name: string, outcome: string): Attributes {
    let byOutcome = this.#toolAttributes.get(name);
    if (byOutcome === undefined) {
      byOutcome = new Map();
      this.#toolAttributes.set(name, byOutcome);
    }
    let attributes = byOutcome.get(outcome);
    if (attributes === undefined) {
      attributes = { 'gen_ai.tool.name': name, 'turnlog.tool.outcome': outcome };
      byOutcome.set(outcome, attributes);
    }
    return attributes;
  }

  /** Stops reporting `turnlog.runs` (the runtime closed). */
  close(): void {
    this.#runs.removeCallback(this.#countRuns);
  }
}

const stateAttributes: Record<RunState, Attributes> = {
  running: { 'turnlog.run.state': 'running' },
  parked: { 'turnlog.run.state': 'parked' },
  waiting_for_person: { 'turnlog.run.state': 'waiting_for_person' },
};

function runStatesZero(): [RunState, number][] {
  return runStates.map((state) => [state, 0]);
}
