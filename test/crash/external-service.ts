// The simulated external service of the service campaigns (issue 24, evidence): a separate
// process with its own durable, append-only ledger, so an effect that landed outlives any agent
// the campaign SIGKILLs. It is a test fixture, not turnlog's HTTP surface (the trust-layer rules
// of http/ do not apply), and it listens on 127.0.0.1 only, on a port the OS picks.
//
//   POST /charge   {key, …}  applies every request (a payment API without deduplication)
//   GET  /charge?key=…       {found}: was a charge with this key applied? (what `reconcile` asks)
//   POST /notify   {key, …}  applied once per key: a repeat answers {applied: false}
//   POST /shell    {key, …}  applies every request; the key means nothing to it
//
// Each applied effect is one JSON line in the ledger ({op, key, sessionId, callId, workerId,
// pid}), written and fsynced before the answer is sent: once a tool has its answer, the effect
// is durable. Requests are handled one at a time (synchronous writes), so a check and an apply
// of the same key never interleave.
// Prints `listening <port>` once it accepts requests.
// Usage: node test/crash/external-service.ts <ledger file>
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const ledgerFile = process.argv[2];
if (ledgerFile === undefined) throw new Error('usage: external-service.ts <ledger file>');

interface Effect {
  op: string;
  key: string;
}

// What the ledger already holds (the service may be restarted on the same file).
const applied = new Set<string>();
if (existsSync(ledgerFile)) {
  for (const line of readFileSync(ledgerFile, 'utf8').split('\n')) {
    if (line === '') continue;
    const effect = JSON.parse(line) as Effect;
    applied.add(`${effect.op} ${effect.key}`);
  }
}
const ledger = openSync(ledgerFile, 'a');

function record(body: Effect & Record<string, unknown>): void {
  writeSync(ledger, `${JSON.stringify(body)}\n`);
  fsyncSync(ledger);
  applied.add(`${body.op} ${body.key}`);
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return JSON.parse(text) as Record<string, unknown>;
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const op = url.pathname.slice(1);
  if (request.method === 'GET' && op === 'charge') {
    const key = url.searchParams.get('key') ?? '';
    reply(response, 200, { found: applied.has(`charge ${key}`) });
    return;
  }
  if (request.method !== 'POST' || !['charge', 'notify', 'shell'].includes(op)) {
    reply(response, 404, { error: `no ${request.method} ${url.pathname}` });
    return;
  }
  const body = await readBody(request);
  const key = typeof body.key === 'string' ? body.key : '';
  if (op === 'notify' && applied.has(`notify ${key}`)) {
    reply(response, 200, { applied: false });
    return;
  }
  record({ ...body, op, key });
  reply(response, 200, { applied: true });
}

const server = createServer((request, response) => {
  handle(request, response).catch((error: unknown) =>
    reply(response, 400, { error: String(error) }),
  );
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  closeSync(ledger);
  process.exit(0);
});
