import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashJson } from '../../../events/json.ts';
import { workspaceTools } from '../../../tools/builtin/workspace-tools.ts';
import { createCallSettler } from '../../../tools/call-settler.ts';
import { callTool, tempWorkspace } from '../helpers/call-tool.ts';
import { createToolLog, provenCall } from '../helpers/tool-log.ts';

let base: string;
let root: string;

beforeEach(() => {
  ({ base, root } = tempWorkspace());
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
  delete process.env.TURNLOG_TEST_SECRET;
});

/** True when `pid` is gone or a zombie (killed, not yet reaped by whoever adopted it). */
function isDead(pid: number): boolean {
  const statFile = `/proc/${pid}/stat`;
  if (!existsSync(statFile)) return true;
  const state = readFileSync(statFile, 'utf8').split(') ')[1]?.[0];
  return state === 'Z' || state === 'X';
}

describe('runCommand', () => {
  it('asks by default, then runs argv without a shell in the workspace root', async () => {
    const { requested, settled } = await callTool(workspaceTools({ root }), 'runCommand', {
      command: 'echo',
      args: ['$HOME', '; ls', '*'],
    });
    expect(requested).toMatchObject({
      input: { command: 'echo', args: ['$HOME', '; ls', '*'], cwd: '.' },
    });
    expect(settled).toMatchObject({
      outcome: 'success',
      text: "$ echo '$HOME' '; ls' '*'\n[exit code 0]\n$HOME ; ls *\n",
    });
  });

  it('runs in the root (or a checked subdirectory) with HOME set to the root', async () => {
    const tools = workspaceTools({ root, permissions: { runCommand: 'allow' } });
    const pwd = await callTool(tools, 'runCommand', { command: 'pwd' });
    expect(pwd.settled.text).toBe(`$ pwd\n[exit code 0]\n${root}\n`);
    await callTool(tools, 'runCommand', { command: 'mkdir', args: ['sub'] });
    const sub = await callTool(tools, 'runCommand', { command: 'pwd', cwd: 'sub' });
    expect(sub.settled.text).toBe(`$ pwd\n[exit code 0]\n${path.join(root, 'sub')}\n`);
  });

  it("sees only PATH, HOME, LANG and explicit variables, never a secret from the parent's environment", async () => {
    process.env.TURNLOG_TEST_SECRET = 'hunter2-do-not-leak';
    const tools = workspaceTools({
      root,
      permissions: { runCommand: 'allow' },
      runCommand: { path: '/usr/bin:/bin', env: { CI: '1' } },
    });
    const { settled } = await callTool(tools, 'runCommand', { command: 'env' });
    expect(settled.outcome).toBe('success');
    expect(settled.text).not.toContain('hunter2');
    const variables = settled.text
      .split('\n')
      .slice(2)
      .filter((line) => line.includes('='))
      .map((line) => line.slice(0, line.indexOf('=')))
      .sort();
    expect(variables).toEqual(['CI', 'HOME', 'LANG', 'PATH']);
    expect(settled.text).toContain(`HOME=${root}\n`);
    expect(settled.text).toContain('PATH=/usr/bin:/bin\n');
  });

  it('redacts the values of env from the output and errors like secrets, leaving short ones', async () => {
    const token = 'ghp_0123456789abcdef';
    const tools = workspaceTools({
      root,
      permissions: { runCommand: 'allow' },
      runCommand: { path: '/usr/bin:/bin', env: { GITHUB_TOKEN: token, CI: '1' } },
    });
    const printed = await callTool(tools, 'runCommand', {
      command: 'printenv',
      args: ['GITHUB_TOKEN', 'CI'],
    });
    expect(printed.settled).toMatchObject({
      outcome: 'success',
      text: '$ printenv GITHUB_TOKEN CI\n[exit code 0]\n[redacted]\n1\n',
    });
    expect(printed.settled.output).toBeUndefined();
    const missing = await callTool(tools, 'runCommand', { command: `./${token}` });
    expect(missing.settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: command not found: ./[redacted] (not on PATH, and no such file)',
    });
    for (const { log } of [printed, missing]) {
      expect(JSON.stringify(log.ofType('tool.settled'))).not.toContain(token);
    }
  });

  it('reports a non-zero exit code as a result, not a tool failure', async () => {
    const tools = workspaceTools({ root, permissions: { runCommand: 'allow' } });
    const { settled } = await callTool(tools, 'runCommand', {
      command: 'ls',
      args: ['missing-file'],
    });
    expect(settled.outcome).toBe('success');
    expect(settled.text).toMatch(
      /^\$ ls missing-file\n\[exit code 2\]\nls: .*missing-file.*No such file or directory\n$/,
    );
  });

  it('settles a command that does not exist as error', async () => {
    const tools = workspaceTools({ root, permissions: { runCommand: 'allow' } });
    const { settled } = await callTool(tools, 'runCommand', { command: 'no-such-program-xyz' });
    expect(settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: command not found: no-such-program-xyz (not on PATH, and no such file)',
    });
  });

  it('caps stdout and stderr together, keeping head and tail around a marker', async () => {
    const tools = workspaceTools({
      root,
      permissions: { runCommand: 'allow' },
      runCommand: { outputBytes: 1_000 },
    });
    const { settled } = await callTool(tools, 'runCommand', {
      command: 'seq',
      args: ['1', '100000'],
    });
    // seq 1 100000 prints 588895 bytes; 600 head + 400 tail are kept.
    expect(settled.outcome).toBe('success');
    expect(settled.text.startsWith('$ seq 1 100000\n[exit code 0]\n1\n2\n3\n')).toBe(true);
    expect(settled.text).toContain(
      '\n[… 587895 bytes of output cut here. Do not re-run commands with side effects just to see them; ask for less output instead (a filter, a quieter flag).]\n',
    );
    expect(settled.text.endsWith('99999\n100000\n')).toBe(true);
    expect(settled.text.length).toBeLessThan(1_300);
  });

  it('kills the whole process group at the timeout and reports it', async () => {
    const tools = workspaceTools({
      root,
      permissions: { runCommand: 'allow' },
      // Long enough for the shell to start and print under a loaded machine (300 ms was not).
      runCommand: { timeoutMs: 2_000 },
    });
    const { settled } = await callTool(tools, 'runCommand', {
      command: 'sh',
      args: ['-c', 'sleep 30 & echo $! > background.pid; echo started; wait'],
    });
    expect(settled.outcome).toBe('success');
    expect(settled.text).toBe(
      "$ sh -c 'sleep 30 & echo $! > background.pid; echo started; wait'\n[killed after the 2000 ms timeout]\nstarted\n",
    );
    const backgroundPid = Number(readFileSync(path.join(root, 'background.pid'), 'utf8'));
    expect(isDead(backgroundPid)).toBe(true);
  });

  it('kills the process group when the run stops, settling cancelled', async () => {
    const tools = workspaceTools({ root, permissions: { runCommand: 'allow' } });
    const runtime = createCallSettler({ tools });
    const log = createToolLog();
    const call = provenCall('runCommand', {
      command: 'sh',
      args: ['-c', 'echo $$ > shell.pid; sleep 30'],
    });
    const context = await log.completeStep('step_1', [call]);
    const input = { command: 'sh', args: ['-c', 'echo $$ > shell.pid; sleep 30'], cwd: '.' };
    const running = runtime.run(
      call,
      { decision: 'allow', inputHash: hashJson(input), by: 'user' },
      context,
    );
    // Stop once the shell has written its pid (the command is demonstrably running).
    const pidFile = path.join(root, 'shell.pid');
    const written = () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n');
    await new Promise<void>((resolve) => {
      const check = () => (written() ? resolve() : setImmediate(check));
      check();
    });
    const shellPid = Number(readFileSync(pidFile, 'utf8'));
    expect(shellPid).toBeGreaterThan(1);
    log.controller.abort('stop');
    await running;
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'cancelled',
        text: 'The run was stopped while this call was running; the tool ended with: the command was killed because the run was stopped. It may have partly run; inspect the current state before retrying.',
      },
    ]);
    expect(isDead(shellPid)).toBe(true);
  });
});
