// The chat page of the browser test of chatHandler: an app's page as a new user writes it from
// the AI SDK's docs, with `useChat` (@ai-sdk/react) and `DefaultChatTransport` (ai), and no
// turnlog code. `?api=/api/chat` talks to chatHandler (the default); `?api=/sdk/api/chat` to the
// AI SDK's own streamText route, for the comparison. Bundled with esbuild by the test.
import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  getToolName,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';

const params = new URL(window.location.href).searchParams;
const api = params.get('api') ?? '/api/chat';
const chatId = params.get('session') ?? 'chat';
/** Only the chat route keeps the conversation (the streamText route keeps nothing). */
const kept = api === '/api/chat';
const messagesUrl = `${api}/${encodeURIComponent(chatId)}/messages`;

async function loadMessages(): Promise<UIMessage[]> {
  if (!kept) return [];
  const response = await fetch(messagesUrl);
  if (!response.ok) throw new Error(`${response.status}`);
  return response.json();
}

function App() {
  const [initial, setInitial] = useState<UIMessage[]>();
  useEffect(() => {
    void loadMessages().then(setInitial);
  }, []);
  return initial === undefined ? <p>Loading…</p> : <Chat initial={initial} />;
}

function Chat({ initial }: { initial: UIMessage[] }) {
  const [input, setInput] = useState('');
  const files = useRef<HTMLInputElement>(null);
  const reconnect = useRef(() => {});
  const chat = useChat({
    id: chatId,
    messages: initial,
    resume: kept,
    transport: new DefaultChatTransport({ api }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onFinish: ({ isDisconnect }) => {
      if (isDisconnect && kept) reconnect.current();
    },
  });
  // The server went away mid-stream: when it is back, read the log and resume the run.
  reconnect.current = () => {
    const attempt = async (tries: number) => {
      try {
        chat.setMessages(await loadMessages());
        chat.clearError();
        await chat.resumeStream();
      } catch {
        setTimeout(() => void attempt(tries + 1), Math.min(250 * 2 ** tries, 2_000));
      }
    };
    void attempt(0);
  };

  async function stop() {
    // useChat's stop() only closes the stream; the chat route stops the run itself.
    if (kept) {
      await fetch(`${api}/${encodeURIComponent(chatId)}/stop`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
    } else await chat.stop();
  }

  return (
    <main>
      <section aria-label="messages">
        {chat.messages.map((message) => (
          <article key={message.id} className={`message ${message.role}`} data-id={message.id}>
            {message.parts.map((part, index) => {
              const key = `${message.id}:${index}`;
              if (isToolUIPart(part)) {
                return <ToolPart key={key} part={part} onAnswer={chat.addToolApprovalResponse} />;
              }
              if (part.type === 'text') {
                return (
                  <p key={key} className="text">
                    {part.text}
                  </p>
                );
              }
              if (part.type === 'file') {
                return <img key={key} className="file" src={part.url} alt={part.filename} />;
              }
              return null;
            })}
          </article>
        ))}
      </section>
      <p role="status">{chat.status}</p>
      {chat.error !== undefined && <p role="alert">{chat.error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const attached = files.current?.files ?? undefined;
          void chat.sendMessage({ text: input, ...(attached?.length ? { files: attached } : {}) });
          setInput('');
          if (files.current !== null) files.current.value = '';
        }}
      >
        <input
          aria-label="message"
          value={input}
          onChange={(event) => setInput(event.target.value)}
        />
        <input aria-label="attach" type="file" accept="image/*" ref={files} />
        <button type="submit">Send</button>
        <button type="button" onClick={() => void stop()}>
          Stop
        </button>
        <button type="button" onClick={() => void chat.regenerate()}>
          Regenerate
        </button>
      </form>
    </main>
  );
}

type ToolUIPart = Extract<UIMessage['parts'][number], { toolCallId: string }>;

function ToolPart({
  part,
  onAnswer,
}: {
  part: ToolUIPart;
  onAnswer: (answer: { id: string; approved: boolean }) => void;
}) {
  const approval = part.approval;
  return (
    <section className="tool" data-tool={getToolName(part)} data-state={part.state}>
      <strong>{getToolName(part)}</strong>
      {part.title !== undefined && <span className="title">{part.title}</span>}
      {part.state === 'approval-requested' && approval !== undefined && (
        <div>
          <p className="reason">{approval.requestReason}</p>
          <button type="button" onClick={() => onAnswer({ id: approval.id, approved: true })}>
            Approve
          </button>
          <button type="button" onClick={() => onAnswer({ id: approval.id, approved: false })}>
            Deny
          </button>
        </div>
      )}
      {part.state === 'output-available' && (
        <pre className="output">{JSON.stringify(part.output)}</pre>
      )}
      {part.state === 'output-error' && <p className="error">{part.errorText}</p>}
    </section>
  );
}

createRoot(document.getElementById('root') as HTMLElement).render(<App />);
