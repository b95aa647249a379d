import { describe, expect, it } from 'vitest';
import { toUIMessages } from '../../adapters/ui/ui-message-stream.ts';
import { projectHistory } from '../../events/project-history.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { loadSampleLog } from './sample-logs.ts';

const facts = loadSampleLog('reconciled');

describe('reconciled.jsonl: calls checked by their own tools after a restart', () => {
  it('projectTurn shows what each check found, and nothing is pending', () => {
    const view = projectTurn(facts);
    expect(
      view.runs.map((run) =>
        run.steps[0]?.toolCalls.map((call) => [call.name, call.reconciled?.text, call.outcome]),
      ),
    ).toEqual([
      [
        ['charge', 'checked after a restart: it had run', 'success'],
        ['sendReceipt', 'ran again after a restart: the tool is idempotent', 'success'],
      ],
      [['charge', 'checked after a restart: it had not run, so it ran again', 'success']],
      [
        [
          'charge',
          'checked after a restart: it could not tell (the payment API answered 503)',
          'unknown',
        ],
      ],
    ]);
    expect(view.runs.map((run) => run.status)).toEqual(['completed', 'completed', 'completed']);
    expect(view.pending).toEqual([]);
  });

  it('the model reads the real result of a call whose reconcile said done', () => {
    const history = JSON.stringify(projectHistory(facts, { provider: 'scripted' }));
    expect(history).toContain('{\\"chargeId\\":\\"ch_1\\",\\"cents\\":500}');
  });

  it('toUIMessages shows each check as a data-reconciled part, and asks only for the unknown one', () => {
    const assistant = toUIMessages(facts).filter((message) => message.role === 'assistant');
    expect(
      assistant.map((message) =>
        message.parts.flatMap((part) =>
          part.type === 'data-reconciled' ? [part.data.answer] : [],
        ),
      ),
    ).toEqual([['idempotent', 'done'], ['not-done'], ['unknown']]);
    expect(
      assistant.map((message) =>
        message.parts.flatMap((part) => (part.type === 'data-decision' ? [part.data.kind] : [])),
      ),
    ).toEqual([['permission'], ['permission'], ['permission', 'indeterminate']]);
  });

  it('toUIMessages titles each checked call with what the check found, in standard UIMessage terms', () => {
    const assistant = toUIMessages(facts).filter((message) => message.role === 'assistant');
    expect(
      assistant.map((message) =>
        message.parts.flatMap((part) =>
          'toolCallId' in part && part.title !== undefined
            ? [[part.title, part.toolMetadata?.reconciled, part.state]]
            : [],
        ),
      ),
    ).toEqual([
      [
        ['Checked after a restart: it had run', 'done', 'output-available'],
        ['Ran again after a restart: the tool is idempotent', 'idempotent', 'output-available'],
      ],
      [
        [
          'Checked after a restart: it had not run, so it ran again',
          'not-done',
          'output-available',
        ],
      ],
      [
        [
          'Checked after a restart: it could not tell (the payment API answered 503)',
          'unknown',
          'output-error',
        ],
      ],
    ]);
  });
});
