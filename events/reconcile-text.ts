import { assertNever, type ReconcileAnswer } from './facts.ts';

/**
 * What a UI says of a call that was checked after a restart (`tool.reconciled`): "checked after
 * a restart: it had run" (`done`), "… it had not run" (`not-done`), "… it could not tell"
 * (`unknown`, with the tool's reason), or that it ran again because its tool is idempotent.
 *
 * @example
 * reconcileText('done'); // 'checked after a restart: it had run'
 */
export function reconcileText(answer: ReconcileAnswer, reason?: string): string {
  switch (answer) {
    case 'done':
      return 'checked after a restart: it had run';
    case 'not-done':
      return 'checked after a restart: it had not run, so it ran again';
    case 'unknown':
      return `checked after a restart: it could not tell${reason === undefined ? '' : ` (${reason})`}`;
    case 'idempotent':
      return 'ran again after a restart: the tool is idempotent';
    default:
      return assertNever(answer, 'reconcile answer');
  }
}
