/**
 * Every error turnlog throws, in one place. Each class lives next to the code that throws it
 * (the file named below); all extend `TurnlogError` (a stable `name`, a static `isInstance`
 * that works across copies of the package) and are exported from the package root.
 */

// Model adapters (adapters/).
export { ScriptExhaustedError, UnsupportedModelError } from './adapters/adapter-errors.ts';
// The log: projections (events/) and stores (store/).
export { ProjectionInputError } from './events/projection-input-error.ts';
// The base class.
export { TurnlogError } from './events/turnlog-error.ts';
// The HTTP trust layer (http/): a refused request, an unsafe bind.
export { HttpRefusedError, InsecureBindError } from './http/http-errors.ts';
// The machine: a log it cannot rebuild (machines/pure/rehydrate.ts).
export { ReplayDivergenceError } from './machines/pure/rehydrate.ts';
// The runtime's public operations (runtime.ts).
export {
  DamagedSessionError,
  InvalidArgumentError,
  NoActiveRunError,
  RuntimeClosedError,
  SessionBusyError,
} from './runtime-errors.ts';
export {
  ConcurrencyError,
  RunSealedError,
  StoreClosedError,
  StoreCorruptionError,
  StoreError,
  StoreInputError,
  StoreLockedError,
  StoreWriteError,
} from './store/event-store.ts';
export { StoreOpenError, StoreUnavailableError } from './store/postgres/postgres-errors.ts';
export { LeaseLostError, RunLeasedError } from './store/run-leases.ts';
export { ArchiveFormatError, SessionExistsError } from './store/session-retention.ts';

// Tools: definitions, permissions and decisions, MCP (tools/).
export { McpToolsError } from './tools/mcp/mcp-client.ts';
export {
  DecisionConflictError,
  DecisionMismatchError,
  InvalidDecisionError,
  PermissionVerdictError,
  UnknownDecisionError,
} from './tools/permission-policy.ts';
export {
  ReservedToolNameError,
  ToolDefinitionError,
  ToolSchemaConversionError,
  WorkspaceRootError,
} from './tools/tool-errors.ts';
