// The stdio guard: a small process between an agent and the MCP server it starts over stdio,
// so that the server (and every process it started) ends when the agent ends, however it ends.
// `mcpStdioServer()` puts it in front of the server's command; it is not imported by anything.
//
//   node stdio-guard.js <command> [args…]
//
// It starts the server in a process group of its own, passes its own stdout and stderr to it
// (the server writes to the agent's pipes directly), and copies its stdin to the server's. The
// kernel closes the agent's end of that pipe when the agent exits or is killed (SIGKILL too), so
// the end of stdin is how the guard learns the agent is gone:
//
//   stdin ends           -> end the server's stdin (a well-behaved server exits now);
//                           after graceMs SIGTERM the group, after graceMs more SIGKILL it
//   SIGTERM, SIGINT, HUP -> SIGTERM the group; after graceMs SIGKILL it
//   the server exits     -> SIGTERM what is left of its group, SIGKILL it after graceMs; then
//                           exit with the server's code (128 + signal when it was killed)
//
// Not covered: the guard itself killed with SIGKILL at the same time (`kill -9 -<pgid>` of the
// agent's group, the OOM killer choosing it), and a server that leaves its process group
// (setsid, daemonizing). POSIX only: `mcpStdioServer` does not use the guard on Windows.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** How long the server gets to exit by itself after each step (the SDK's close waits 2 s). */
const graceMs = 1_000;

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  process.stderr.write('stdio-guard: usage: node stdio-guard.js <command> [args…]\n');
  process.exit(2);
}

const server = spawn(command, args, { stdio: ['pipe', 'inherit', 'inherit'], detached: true });
const group = server.pid;

/** Sends `signal` to the server's whole group; false once the group is gone. */
function signalGroup(signal: NodeJS.Signals | 0): boolean {
  if (group === undefined) return false;
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false;
  }
}

let stopping = false;
/** SIGTERM the group now (or after `delayMs`), then SIGKILL it `graceMs` later. */
function stopGroup(delayMs = 0): void {
  if (stopping) return;
  stopping = true;
  setTimeout(() => {
    signalGroup('SIGTERM');
    setTimeout(() => signalGroup('SIGKILL'), graceMs).unref();
  }, delayMs).unref();
}

server.on('error', (error) => {
  process.stderr.write(`stdio-guard: cannot start ${JSON.stringify(command)}: ${error.message}\n`);
  process.exit(127);
});
server.stdin.on('error', () => {
  // EPIPE: the server closed its stdin or exited; its exit ends the guard.
});
process.stdin.pipe(server.stdin);
process.stdin.on('end', () => stopGroup(graceMs));
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(signal, () => stopGroup());
}

server.on('exit', (code, signal) => {
  const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
  // What the server started may still run in its group: end it before leaving.
  if (!signalGroup('SIGTERM')) process.exit(status);
  const started = Date.now();
  const poll = setInterval(() => {
    if (!signalGroup(0)) process.exit(status);
    if (Date.now() - started >= graceMs) {
      signalGroup('SIGKILL');
      process.exit(status);
    }
  }, 20);
  poll.unref();
  // Keep the guard alive while it waits (stdin may have ended already).
  setTimeout(() => {}, graceMs + 100);
});
