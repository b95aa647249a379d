import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceTools } from '../../../tools/builtin/workspace-tools.ts';

describe('built-in workspace tools after a restart', () => {
  it('readFile, listFiles and writeFile are idempotent (run again); runCommand is not (a person decides)', () => {
    const tools = workspaceTools({ root: mkdtempSync(path.join(tmpdir(), 'turnlog-idem-')) });
    expect(
      Object.fromEntries(
        Object.entries(tools).map(([name, tool]) => [name, tool.idempotent ?? false]),
      ),
    ).toEqual({ readFile: true, writeFile: true, listFiles: true, runCommand: false });
    expect(Object.values(tools).filter((tool) => tool.reconcile !== undefined)).toEqual([]);
  });
});
