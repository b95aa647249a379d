// One chat message: text, reasoning, steering, and tool calls with their approvals and results.
import { getToolName, isToolUIPart } from 'ai';
import type { TurnlogDecisionData, TurnlogUIMessage } from '../../../index.ts';

type Part = TurnlogUIMessage['parts'][number];
type ToolPart = Extract<Part, { toolCallId: string }>;

/** Renders a message; `onAnswer` answers an approval (approved or not). */
export function MessageView({
  message,
  onAnswer,
}: {
  message: TurnlogUIMessage;
  onAnswer: (approvalId: string, approved: boolean) => void;
}) {
  const decisions = new Map<string, TurnlogDecisionData>();
  for (const part of message.parts) {
    if (part.type === 'data-decision' && part.id !== undefined) decisions.set(part.id, part.data);
  }
  return (
    <article className={`message ${message.role}`} data-role={message.role}>
      {message.parts.map((part, index) => {
        const key = `${message.id}:${index}`;
        if (isToolUIPart(part)) {
          const decision =
            part.approval === undefined ? undefined : decisions.get(part.approval.id);
          return <ToolView key={key} part={part} decision={decision} onAnswer={onAnswer} />;
        }
        switch (part.type) {
          case 'text':
            return (
              <p key={key} className="text">
                {part.text}
              </p>
            );
          case 'reasoning':
            return (
              <details key={key} className="reasoning">
                <summary>Reasoning</summary>
                {part.text}
              </details>
            );
          case 'steering-message':
            return (
              <p key={key} className="steering">
                you, meanwhile:{' '}
                {part.parts.map((inner) => (inner.type === 'text' ? inner.text : '')).join('')}
              </p>
            );
          case 'file':
            return part.mediaType.startsWith('image/') ? (
              <img key={key} className="attachment" src={part.url} alt={part.filename ?? 'image'} />
            ) : (
              <p key={key} className="attachment">
                {part.filename ?? part.mediaType}
              </p>
            );
          case 'step-start':
            return index === 0 ? null : <hr key={key} />;
          default:
            return null;
        }
      })}
    </article>
  );
}

const stateLabels: Record<ToolPart['state'], string> = {
  'input-streaming': 'receiving input…',
  'input-available': 'running…',
  'approval-requested': 'asks for your approval',
  'approval-responded': 'answered, running…',
  'output-available': 'done',
  'output-error': 'not done',
  'output-denied': 'denied',
};

function ToolView({
  part,
  decision,
  onAnswer,
}: {
  part: ToolPart;
  decision: TurnlogDecisionData | undefined;
  onAnswer: (approvalId: string, approved: boolean) => void;
}) {
  const name = getToolName(part);
  const approval = part.approval;
  // A provider-executed tool (web search, code execution): the provider ran it, not turnlog.
  const byProvider = part.providerExecuted === true;
  return (
    <section
      className={`tool ${part.state}`}
      data-tool={name}
      data-state={part.state}
      data-provider-executed={byProvider ? 'true' : undefined}
      aria-label={`tool ${name}`}
    >
      <header>
        <strong>{name}</strong>{' '}
        <span className="badge">
          {byProvider && part.state === 'input-available'
            ? 'no result yet'
            : stateLabels[part.state]}
        </span>
        {byProvider && <span className="muted"> run by the provider</span>}
        {part.title !== undefined && <span className="title"> {part.title}</span>}
      </header>
      <pre className="input">{JSON.stringify(part.input)}</pre>
      {part.state === 'approval-requested' && approval !== undefined && (
        <div className="approval">
          {approval.requestReason !== undefined && <p>{approval.requestReason}</p>}
          <button type="button" onClick={() => onAnswer(approval.id, true)}>
            {decision?.kind === 'indeterminate' ? 'Report unknown' : 'Allow'}
          </button>
          <button type="button" onClick={() => onAnswer(approval.id, false)}>
            {decision?.kind === 'indeterminate' ? 'Abort' : 'Deny'}
          </button>
        </div>
      )}
      {part.state === 'output-available' && (
        <pre className={byProvider ? 'output provider' : 'output'}>
          {typeof part.output === 'string' ? part.output : JSON.stringify(part.output)}
        </pre>
      )}
      {part.state === 'output-error' && <p className="error">{part.errorText}</p>}
      {part.state === 'output-denied' && <p className="error">{approval?.reason ?? 'Denied.'}</p>}
    </section>
  );
}
