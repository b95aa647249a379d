import { describe, expect, it } from 'vitest';
import { CliOutput } from '../../cli/cli-output.ts';

function streams(isTTY: boolean) {
  const written = { stdout: '', stderr: '' };
  return {
    written,
    streams: {
      stdout: { write: (text: string) => (written.stdout += text) },
      stderr: { write: (text: string) => (written.stderr += text), isTTY, columns: 60 },
    },
  };
}

describe('CliOutput progress', () => {
  it('draws a bar redrawn in place on a terminal, and clears it when done', () => {
    const { written, streams: io } = streams(true);
    const progress = new CliOutput(io, { progress: true }).progress('check', 4);
    for (let index = 0; index < 4; index += 1) progress.advance();
    progress.done();
    const frames = written.stderr.split('\r').filter((frame) => frame !== '');
    expect(frames).toHaveLength(5);
    expect(frames[0]).toBe(`check ${'█'.repeat(5)}${'░'.repeat(15)} 25% 1/4`);
    expect(frames[3]).toBe(`check ${'█'.repeat(20)} 100% 4/4`);
    expect(frames[4]).toBe('\x1b[2K');
    expect(written.stdout).toBe('');
  });

  it('writes a plain line at each tenth off a terminal, and nothing with progress off', () => {
    const { written, streams: io } = streams(false);
    const progress = new CliOutput(io, { progress: true }).progress('sessions', 20);
    for (let index = 0; index < 20; index += 1) progress.advance();
    progress.done();
    const lines = written.stderr.trim().split('\n');
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe('sessions: 2/20 (10%)');
    expect(lines[9]).toBe('sessions: 20/20 (100%)');
    const quiet = streams(false);
    const none = new CliOutput(quiet.streams, { progress: false }).progress('sessions', 20);
    none.advance();
    none.done();
    expect(quiet.written.stderr).toBe('');
  });

  it('writes JSON with every documented key, a missing value as null', () => {
    const { written, streams: io } = streams(false);
    new CliOutput(io, { progress: true }).jsonLine({ worker: undefined, runs: 1 });
    expect(written.stdout).toBe('{"worker":null,"runs":1}\n');
  });
});
