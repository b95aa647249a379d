import { TurnlogError } from '../events/turnlog-error.ts';

/** The HTTP status of each turnlog error a route that calls the runtime can meet. */
const statusOfError: Record<string, number> = {
  InvalidArgumentError: 400,
  InvalidDecisionError: 400,
  NoActiveRunError: 404,
  UnknownDecisionError: 404,
  SessionBusyError: 409,
  DamagedSessionError: 409,
  DecisionConflictError: 409,
  DecisionMismatchError: 409,
  RuntimeClosedError: 503,
};

/**
 * The HTTP status for a runtime error the routes answer as `{ error, message }` (the runtime's
 * own checks: 400 a bad argument, 404 no such run or decision, 409 busy, damaged or already
 * decided, 503 closed); `undefined` for anything else (a bug or a failing store: a 500).
 */
export function statusOfTurnlogError(error: unknown): number | undefined {
  return TurnlogError.isTurnlogError(error) ? statusOfError[error.name] : undefined;
}

/** A JSON answer with `status`. */
export function jsonResponse(status: number, value: unknown): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** 405 with `Allow: method` and a JSON body saying which method to use. */
export function methodNotAllowed(method: string): Response {
  return new Response(
    JSON.stringify({ error: 'MethodNotAllowed', message: `Use ${method} for this route.` }),
    { status: 405, headers: { allow: method, 'content-type': 'application/json; charset=utf-8' } },
  );
}
