/**
 * turnlog: durable LLM agent turns. An XState turn machine owns the loop; every fact is
 * appended to a durable event log before anything acts on it. Named exports only.
 */

export {
  type AiSdkAdapterOptions,
  type AiSdkLanguageModel,
  aiSdkAdapter,
} from './adapters/ai-sdk-adapter.ts';
export type {
  ModelAdapter,
  ModelStep,
  ModelStepCompletion,
  ModelStepEvent,
  ModelStepRequest,
} from './adapters/model-adapter.ts';
export { classifyProviderError } from './adapters/provider-error.ts';
export {
  type ScriptedError,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedResponse,
  type ScriptedStep,
  type ScriptedToolCall,
  scriptedModel,
} from './adapters/scripted-model.ts';
export {
  type ApprovalDecision,
  decisionFromApproval,
  type ToUIMessageStreamOptions,
  type TurnlogDataTypes,
  type TurnlogDecisionData,
  type TurnlogMessageMetadata,
  type TurnlogReconciledData,
  type TurnlogUIMessage,
  type TurnlogUIMessageChunk,
  toUIMessageStream,
  toUIMessages,
} from './adapters/ui/ui-message-stream.ts';
export {
  ArchiveFormatError,
  ConcurrencyError,
  DamagedSessionError,
  DecisionConflictError,
  DecisionMismatchError,
  InvalidArgumentError,
  InvalidDecisionError,
  LeaseLostError,
  McpToolsError,
  NoActiveRunError,
  PermissionVerdictError,
  ProjectionInputError,
  ReplayDivergenceError,
  ReservedToolNameError,
  RunLeasedError,
  RunSealedError,
  RuntimeClosedError,
  ScriptExhaustedError,
  SessionBusyError,
  SessionExistsError,
  StoreClosedError,
  StoreCorruptionError,
  StoreError,
  StoreInputError,
  StoreLockedError,
  StoreOpenError,
  StoreUnavailableError,
  StoreWriteError,
  ToolDefinitionError,
  ToolSchemaConversionError,
  TurnlogError,
  UnknownDecisionError,
  UnsupportedModelError,
  WorkspaceRootError,
} from './errors.ts';
export { classifyTerminal, type TerminalClassification } from './events/classify-terminal.ts';
export type {
  ContentPart,
  Fact,
  FactOf,
  FactType,
  FinishReason,
  NewFact,
  PartialSnapshot,
  PermissionDecision,
  ProviderFailure,
  ProviderFailureKind,
  ProviderToolCallPart,
  ProviderToolResultPart,
  ReconcileAnswer,
  RecordedFingerprint,
  RequestCapture,
  RunLimits,
  RunSettings,
  RunStatus,
  ToolCallProof,
  ToolCallRecord,
  ToolOutcome,
  TraceContext,
  TransientEvent,
  Usage,
} from './events/facts.ts';
export { factTypes, isFact } from './events/facts.ts';
export { createIdGenerator, type IdGenerator, sequentialIds } from './events/ids.ts';
export {
  canonicalJson,
  hashJson,
  type JsonObject,
  type JsonValue,
  type ProviderOptions,
} from './events/json.ts';
export type {
  AssistantPart,
  ModelMessage,
  ModelToolDefinition,
  ProviderToolDefinition,
  RequestTool,
  ToolResultPart,
} from './events/messages.ts';
export {
  type LogDamage,
  planRecovery,
  type RecoveryPlan,
  type RunRecovery,
} from './events/plan-recovery.ts';
export { projectHistory } from './events/project-history.ts';
export {
  type PendingDecision,
  type ProviderToolView,
  projectTurn,
  type ReconciledView,
  type RunView,
  type StepView,
  type ToolCallView,
  type TurnReadModel,
} from './events/project-turn.ts';
export { reconcileText } from './events/reconcile-text.ts';
export {
  compareFingerprints,
  type FingerprintDifference,
  type RunFingerprint,
  recordedFingerprint,
  type ToolFingerprint,
} from './events/run-fingerprint.ts';
export {
  type ChatHandlerOptions,
  type ChatRuntime,
  chatHandler,
} from './http/chat-handler.ts';
export { clientAddress } from './http/client-address.ts';
export {
  type ConsoleHandlerOptions,
  type ConsoleRuntime,
  type ConsoleSession,
  type ConsoleSessionList,
  type ConsoleStore,
  consoleHandler,
} from './http/console-handler.ts';
export {
  errorResponse,
  HttpAnswerError,
  type HttpErrorListener,
  type HttpRefusalReason,
  HttpRefusedError,
  InsecureBindError,
  logHttpError,
  refusalResponse,
} from './http/http-errors.ts';
export { listenTrusted } from './http/listen-trusted.ts';
export {
  createNodeHandler,
  type NodeHandlerOptions,
  toWebRequest,
  writeWebResponse,
} from './http/node-adapter.ts';
export { decodePathSegment, readJsonBody } from './http/request-body.ts';
export {
  type Authorize,
  type RequestAction,
  RequestGuard,
  type RequestGuardOptions,
} from './http/request-guard.ts';
export type { TurnEvent, TurnHandle, TurnResult } from './machines/effects/turn-channel.ts';
export { foldRun } from './machines/pure/rehydrate.ts';
export { statePath } from './machines/pure/state-path.ts';
export { recordedStateHasTag } from './machines/pure/state-tags.ts';
export type {
  Reason,
  TurnContext,
  TurnInput,
  TurnOutcome,
  TurnTag,
} from './machines/pure/turn-context.ts';
export { turnMachine, turnMachineVersion } from './machines/pure/turn-machine.ts';
export type {
  TelemetryMeter,
  TelemetryOptions,
  TelemetryTracer,
} from './observability/telemetry-options.ts';
export {
  type BlockedRun,
  checkDeploy,
  type DeployBlocker,
  type DeployCheckOptions,
  type DeployCheckReport,
} from './operations/deploy-check.ts';
export {
  type CallTrace,
  type ReplayDifference,
  type ReplayedRun,
  type ReplayReport,
  type ReplaySessionOptions,
  type RunTrace,
  replaySession,
} from './operations/replay-session.ts';
export {
  type SessionOverview,
  type SessionStatus,
  sessionOverview,
} from './operations/session-overview.ts';
export {
  createRuntime,
  defaultLimits,
  type FollowOptions,
  type ModelSettings,
  type RecoveredRun,
  type Runtime,
  type RuntimeOptions,
  runtimeVersion,
  type SendInput,
  type UserFile,
  type WorkerOptions,
} from './runtime.ts';
export type { EventStore, OpenRun, StoreFinding } from './store/event-store.ts';
export { type LowdbStoreOptions, lowdbStore } from './store/folder/lowdb-store.ts';
export type { StoreFileHandle, StoreFs } from './store/folder/store-fs.ts';
export { type MemoryStoreOptions, memoryStore } from './store/memory/memory-store.ts';
export type { PgPool } from './store/postgres/postgres-connection.ts';
export {
  type PostgresStore,
  type PostgresStoreOptions,
  postgresStore,
} from './store/postgres/postgres-store.ts';
export {
  type PurgeOptions,
  type PurgeProgress,
  type PurgeReport,
  purgeSessions,
} from './store/retention/purge-sessions.ts';
export {
  decodeSessionArchive,
  encodeSessionArchive,
  exportSession,
  importSession,
  type SessionArchive,
  type SessionArchiveHeader,
  sessionArchiveFormat,
} from './store/retention/session-archive.ts';
export type {
  InboxItem,
  InboxOutcome,
  InboxRequest,
  InboxRequestKind,
  RunInbox,
} from './store/run-inbox.ts';
export type {
  LeaseAttempt,
  LeaseRenewalThread,
  LeaseRenewer,
  RunLease,
  RunLeaseState,
  RunLeases,
} from './store/run-leases.ts';
export type {
  EndedSession,
  RemovedSession,
  SessionRetention,
  SessionToRemove,
} from './store/session-retention.ts';
export {
  type WorkspaceTools,
  type WorkspaceToolsOptions,
  workspaceToolNames,
  workspaceTools,
} from './tools/builtin/workspace-tools.ts';
export { defineTool, reservedToolNames, toModelToolDefinitions } from './tools/define-tool.ts';
export { type CallIdentity, idempotencyKey } from './tools/idempotency-key.ts';
export type {
  McpCallToolResult,
  McpClient,
  McpToolInfo,
  McpToolsOptions,
  McpWatchableClient,
} from './tools/mcp/mcp-client.ts';
export {
  type McpStdioServerParameters,
  mcpStdioServer,
} from './tools/mcp/mcp-stdio-server.ts';
export { mcpToolName } from './tools/mcp/mcp-tool-names.ts';
export { type McpTool, mcpTools } from './tools/mcp/mcp-tools.ts';
export {
  type McpToolWatch,
  type WatchMcpToolsOptions,
  watchMcpTools,
} from './tools/mcp/watch-mcp-tools.ts';
export type { OwnTools, ProviderTool, RuntimeTools } from './tools/provider-tool.ts';
export type {
  PermissionPolicy,
  PermissionResult,
  PermissionVerdict,
  PolicyRequest,
  ReconcileResult,
  StandardSchemaV1,
  Tool,
  ToolExecuteContext,
  ToolPermission,
  ToolReconcileContext,
  ToolSet,
} from './tools/tool.ts';
export type { ToolsOption } from './tools/tool-set-source.ts';
