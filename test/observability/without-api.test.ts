import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const childFile = fileURLToPath(new URL('./without-api-child.ts', import.meta.url));

async function runChild(mode: 'hide' | 'show') {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [childFile, mode], {
    timeout: 60_000,
  });
  return { report: JSON.parse(stdout.trim()) as Record<string, unknown>, stderr };
}

describe('without @opentelemetry/api', () => {
  it('exports nothing and fails nothing, where the same run with the API is traced and measured', async () => {
    const [hidden, shown] = await Promise.all([runChild('hide'), runChild('show')]);
    expect(hidden.report).toStrictEqual({
      status: 'completed',
      spans: [],
      metrics: [],
      traceRecorded: false,
      fingerprintRecorded: true,
    });
    // No warning, no error: a missing optional peer is not a problem.
    expect(hidden.stderr).toBe('');
    expect(shown.report).toStrictEqual({
      status: 'completed',
      spans: ['chat scripted-model', 'execute_tool add', 'chat scripted-model', 'invoke_agent'],
      // turnlog.runs is observed only while the runtime is open.
      metrics: [
        'turnlog.steps',
        'gen_ai.client.operation.duration',
        'gen_ai.client.token.usage',
        'turnlog.tool.duration',
        'turnlog.append.duration',
      ],
      traceRecorded: true,
      fingerprintRecorded: true,
    });
  });
});
