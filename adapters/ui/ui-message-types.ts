import type { UIMessage, UIMessageChunk } from 'ai';
import type { PermissionDecision, ReconcileAnswer, RunStatus } from '../../events/facts.ts';

/**
 * The metadata of the assistant message of one run (the message's `id` is the `runId`): where
 * the log stands, so a client can tell what it has seen and what the run is doing.
 */
export interface TurnlogMessageMetadata {
  sessionId: string;
  runId: string;
  /** The `seq` of the last fact the message reflects; continue a stream after it. */
  seq: number;
  /** The turn machine's state after that fact (`awaitingPermission` while a person is asked). */
  state: string | undefined;
  /** `awaiting` while a person owes a decision; the run's status once it ended. */
  status: 'running' | 'awaiting' | RunStatus;
  /** Why the run ended (`run.ended.reason`). */
  reason?: string;
}

/**
 * The `data-decision` part sent with each approval a person is asked for (its `id` is the
 * approval id): which decision approving and denying record, and the decision once recorded.
 * A permission ask is answered `allow` / `deny`; an indeterminate call (it started before a
 * crash and may or may not have run) `report-unknown` / `abort`.
 */
export interface TurnlogDecisionData {
  kind: 'permission' | 'indeterminate';
  toolCallId: string;
  toolName: string;
  /** Recorded when the approval is approved. */
  approve: PermissionDecision;
  /** Recorded when the approval is denied. */
  deny: PermissionDecision;
  /** The decision once it is in the log. */
  decision?: PermissionDecision;
}

/**
 * The `data-reconciled` part sent when a call that may have run was checked after a restart
 * (`tool.reconciled`; its `id` is the fact's): what its tool answered, and the sentence to show
 * ("checked after a restart: it had run" / "… it had not run, so it ran again").
 */
export interface TurnlogReconciledData {
  toolCallId: string;
  toolName: string;
  answer: ReconcileAnswer;
  /** `reconcileText(answer, reason)`. */
  text: string;
}

/** The data parts turnlog's UI message stream sends (`data-<name>`). A type, not an interface: `UIDataTypes` is a record. */
export type TurnlogDataTypes = { decision: TurnlogDecisionData; reconciled: TurnlogReconciledData };

/** A UI message of a turnlog session: a run's user input, or its assistant message. */
export type TurnlogUIMessage = UIMessage<TurnlogMessageMetadata, TurnlogDataTypes>;

/** One chunk of turnlog's UI message stream. */
export type TurnlogUIMessageChunk = UIMessageChunk<TurnlogMessageMetadata, TurnlogDataTypes>;
