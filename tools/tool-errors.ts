import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';

/**
 * A tool definition that cannot work: a missing description, an input schema that is not a
 * Standard Schema, an `execute` that is not a function, a bad timeout or a bad tool name.
 */
export class ToolDefinitionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ToolDefinitionError>('ToolDefinitionError');
  /** The tool's name when it is known (definitions are named by the key of their tool set). */
  readonly toolName: string | undefined;
  /** The definition field that is wrong: `description`, `inputSchema`, `execute`, … or `name`. */
  readonly field: string;

  constructor(options: TurnlogErrorOptions & { toolName?: string; field: string }) {
    super(options);
    this.name = 'ToolDefinitionError';
    this.toolName = options.toolName;
    this.field = options.field;
  }
}

/**
 * A tool name that every JavaScript object already has a meaning for (`__proto__`,
 * `constructor`, `prototype`, `toString`, …: see `reservedToolNames`). Under such a key a tool
 * would become the prototype of its tool record, or be confused with what every object inherits;
 * it is refused wherever a tool gets its name (`createRuntime`'s tools, `mcpTools`).
 */
export class ReservedToolNameError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ReservedToolNameError>('ReservedToolNameError');
  readonly toolName: string;

  constructor(options: TurnlogErrorOptions & { toolName: string }) {
    super(options);
    this.name = 'ReservedToolNameError';
    this.toolName = options.toolName;
  }
}

/** A tool whose input schema cannot be converted to the JSON Schema a provider needs. */
export class ToolSchemaConversionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ToolSchemaConversionError>('ToolSchemaConversionError');
  readonly toolName: string;

  constructor(options: TurnlogErrorOptions & { toolName: string }) {
    super(options);
    this.name = 'ToolSchemaConversionError';
    this.toolName = options.toolName;
  }
}

/** A workspace root for the built-in tools that does not exist or is not a directory. */
export class WorkspaceRootError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<WorkspaceRootError>('WorkspaceRootError');
  readonly root: string;

  constructor(options: TurnlogErrorOptions & { root: string }) {
    super(options);
    this.name = 'WorkspaceRootError';
    this.root = options.root;
  }
}
