// The chat page: useChat over the AI SDK's default transport (/api/chat), with turnlog's UI
// message stream behind it. Approvals are answered with addToolApprovalResponse and sent back
// by the SDK itself (lastAssistantMessageIsCompleteWithApprovalResponses); a dropped stream
// (the server restarted) is resumed from the log. While the run waits for a person, the page
// follows it: a decision made on another page (or a stop) shows here as it happens.
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { StrictMode, useCallback, useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import type { TurnlogUIMessage } from '../../../index.ts';
import { MessageView } from './message-view.tsx';
import './styles.css';

/** The session (chat) id: `?session=` in the URL, or a new one put there. */
function sessionFromUrl(): string {
  const url = new URL(window.location.href);
  let session = url.searchParams.get('session');
  if (session === null || session === '') {
    session = `chat-${Date.now().toString(36)}`;
    url.searchParams.set('session', session);
    window.history.replaceState(null, '', url);
  }
  return session;
}

async function loadMessages(sessionId: string): Promise<TurnlogUIMessage[]> {
  const response = await fetch(`/api/chat/${encodeURIComponent(sessionId)}/messages`);
  if (!response.ok) throw new Error(`GET messages answered ${response.status}`);
  return response.json();
}

function App() {
  const [sessionId] = useState(sessionFromUrl);
  const [initial, setInitial] = useState<TurnlogUIMessage[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    loadMessages(sessionId).then(setInitial, (cause: Error) => setError(cause.message));
  }, [sessionId]);
  if (error !== undefined) return <p className="error">Could not load the chat: {error}</p>;
  if (initial === undefined) return <p className="muted">Loading the log…</p>;
  return <Chat sessionId={sessionId} initial={initial} />;
}

function Chat({ sessionId, initial }: { sessionId: string; initial: TurnlogUIMessage[] }) {
  const [input, setInput] = useState('');
  const [files, setFiles] = useState<FileList | undefined>();
  const fileInput = useRef<HTMLInputElement>(null);
  // The text of the last message sent: put back in the input if the server refused it (409).
  const lastSent = useRef('');
  const [reconnecting, setReconnecting] = useState(false);
  const reconnect = useRef<() => void>(() => {});
  const chat = useChat<TurnlogUIMessage>({
    id: sessionId,
    messages: initial,
    // On load, pick up a run that is still going: the server replays it from the log.
    resume: true,
    transport: new DefaultChatTransport({ api: '/api/chat' }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onFinish: ({ isDisconnect }) => {
      if (isDisconnect) reconnect.current();
    },
    // A refused message (the run is not finished) is not in the log: give its text back.
    onError: () => setInput((current) => (current === '' ? lastSent.current : current)),
  });
  const { messages, status, setMessages, resumeStream } = chat;

  // The server went away mid-stream: wait for it, reload the log, and resume the run.
  reconnect.current = useCallback(() => {
    setReconnecting(true);
    const attempt = async (tries: number) => {
      try {
        setMessages(await loadMessages(sessionId));
        chat.clearError();
        setReconnecting(false);
        await resumeStream();
      } catch {
        setTimeout(() => attempt(tries + 1), Math.min(250 * 2 ** tries, 2_000));
      }
    };
    void attempt(0);
  }, [sessionId, setMessages, resumeStream, chat.clearError]);

  const lastRun = messages.findLast((message) => message.role === 'assistant')?.metadata;
  const busy = status === 'submitted' || status === 'streaming';
  const unfinished = busy || lastRun?.status === 'running' || lastRun?.status === 'awaiting';

  // The run waits for a person, and this page has no stream open: someone else may answer
  // (another tab, another client of the server). Wait for the run to record anything after
  // what the page shows, then resume its stream (rebuilt from the log, followed live) and
  // read the log. The page's own answer opens a stream first, which ends this wait.
  const waitingAt = status === 'ready' && lastRun?.status === 'awaiting' ? lastRun.seq : undefined;
  useEffect(() => {
    if (waitingAt === undefined || reconnecting) return;
    const controller = new AbortController();
    const moved = `/api/chat/${encodeURIComponent(sessionId)}/moved?after=${waitingAt}`;
    fetch(moved, { signal: controller.signal })
      .then(async (response) => {
        await response.text();
        if (controller.signal.aborted) return;
        // Followed live while the run lasts; the log has the rest if it ended first (204).
        if (response.status === 200) await resumeStream();
        setMessages(await loadMessages(sessionId));
      })
      .catch(() => {
        // Left (aborted), or the server went away: a reload or the next stream picks it up.
      });
    return () => controller.abort();
  }, [waitingAt, reconnecting, sessionId, resumeStream, setMessages]);

  // useChat's stop() only closes the stream: the run itself is stopped by chatHandler's route.
  async function stop() {
    // An action is JSON, or the server's trust layer refuses it (as it refuses a cross-site form).
    await fetch(`/api/chat/${encodeURIComponent(sessionId)}/stop`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    // A streaming run ends on its stream (abort). A parked one has no stream open: follow it
    // to its end (the stop is durable, the cancellations come after), then read the log.
    if (busy) return;
    await resumeStream();
    setMessages(await loadMessages(sessionId));
  }

  return (
    <main className="chat">
      <header>
        <h1>turnlog chat</h1>
        <span className="muted">
          session <code>{sessionId}</code> ·{' '}
          <a href={`/log?session=${encodeURIComponent(sessionId)}`}>log viewer</a>
        </span>
      </header>
      <section className="messages" aria-label="messages">
        {messages.length === 0 && (
          <p className="muted">Ask the note keeper to remember something.</p>
        )}
        {messages.map((message) => (
          <MessageView
            key={message.id}
            message={message}
            onAnswer={(id, approved) => chat.addToolApprovalResponse({ id, approved })}
          />
        ))}
      </section>
      <p className="status" role="status">
        {reconnecting
          ? 'Reconnecting to the server…'
          : statusLine(status, lastRun?.status, lastRun?.reason)}
      </p>
      {chat.error !== undefined && !reconnecting && <p className="error">{chat.error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim() === '' || unfinished) return;
          lastSent.current = input;
          void chat.sendMessage({ text: input, ...(files === undefined ? {} : { files }) });
          setInput('');
          setFiles(undefined);
          if (fileInput.current !== null) fileInput.current.value = '';
        }}
      >
        <input
          aria-label="message"
          value={input}
          placeholder={unfinished ? 'The run is not finished yet' : 'Remember that…'}
          onChange={(event) => setInput(event.target.value)}
          disabled={unfinished || reconnecting}
        />
        <input
          ref={fileInput}
          type="file"
          accept="image/*"
          multiple
          aria-label="attach images"
          onChange={(event) => setFiles(event.target.files ?? undefined)}
          disabled={unfinished || reconnecting}
        />
        <button type="submit" disabled={unfinished || reconnecting || input.trim() === ''}>
          Send
        </button>
        <button
          type="button"
          onClick={() => void chat.regenerate()}
          disabled={unfinished || reconnecting || lastRun === undefined}
        >
          Regenerate
        </button>
        <button type="button" onClick={() => void stop()} disabled={!unfinished || reconnecting}>
          Stop
        </button>
      </form>
    </main>
  );
}

function statusLine(chatStatus: string, run: string | undefined, reason: string | undefined) {
  if (chatStatus === 'submitted') return 'Sending…';
  if (chatStatus === 'streaming') return 'The agent is working…';
  switch (run) {
    case 'awaiting':
      return 'Waiting for your decision.';
    case 'running':
      return 'The run is going on.';
    case 'completed':
      return 'Done.';
    case 'aborted':
      return `Stopped (${reason}).`;
    case 'failed':
      return `Failed (${reason}).`;
    default:
      return '';
  }
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
