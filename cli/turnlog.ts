#!/usr/bin/env node
// The `turnlog` bin (package.json "bin"): runs one command line and exits with its status
// (cli/exit-codes.ts). Ctrl-C and SIGTERM abort the command, which reports what it has.
import { runCli } from './run-cli.ts';

const interrupted = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => interrupted.abort());
}
const status = await runCli({
  argv: process.argv.slice(2),
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: interrupted.signal,
});
// Exit once stdout is flushed: a --runtime module may leave handles open (an MCP client, a
// timer) that would otherwise keep the process alive after the command is done.
process.stdout.write('', () => process.exit(status));
