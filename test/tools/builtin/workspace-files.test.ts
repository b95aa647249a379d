import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../../tools/builtin/workspace-tools.ts';
import { callTool, tempWorkspace } from '../helpers/call-tool.ts';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  ({ base, root, outside } = tempWorkspace());
  writeFileSync(path.join(outside, 'secret.txt'), 'top secret\n');
});

let fifoToRelease: string | undefined;

afterEach(() => {
  if (fifoToRelease !== undefined) {
    closeSync(openSync(fifoToRelease, constants.O_RDWR | constants.O_NONBLOCK));
    fifoToRelease = undefined;
  }
  rmSync(base, { recursive: true, force: true });
});

/** Every path under `directory` (symlinks not followed), for "nothing was touched" checks. */
function snapshot(directory: string, prefix = ''): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    found.push(relative);
    if (entry.isDirectory() && !entry.isSymbolicLink()) {
      found.push(...snapshot(path.join(directory, entry.name), relative));
    }
  }
  return found.sort();
}

describe('path checks of the built-in tools', () => {
  const escapes: Array<[string, () => string, string]> = [
    ['../x', () => '../outside/pwned.txt', 'the path leaves the workspace root (..)'],
    [
      'an absolute path elsewhere',
      () => path.join(outside, 'pwned.txt'),
      'the path is absolute and outside',
    ],
    ['/etc/passwd', () => '/etc/passwd', 'the path is absolute and outside'],
    [
      'a symlink to /',
      () => 'escape/tmp/pwned.txt',
      'the path goes through a symlink that points outside',
    ],
    [
      'a symlinked parent dir',
      () => 'linked/pwned.txt',
      'the path goes through a symlink that points outside',
    ],
    [
      'a symlinked file',
      () => 'linked-file',
      'the path goes through a symlink that points outside',
    ],
  ];

  beforeEach(() => {
    symlinkSync('/', path.join(root, 'escape'));
    symlinkSync(outside, path.join(root, 'linked'));
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'linked-file'));
  });

  it.each(escapes)(
    'writeFile refuses %s as invalid, touching nothing',
    async (_label, target, problem) => {
      const tools = workspaceTools({ root });
      const before = { root: snapshot(root), outside: snapshot(outside) };
      const { settled, log } = await callTool(tools, 'writeFile', {
        path: target(),
        content: 'pwned',
      });
      expect(settled.outcome).toBe('invalid');
      expect(settled.text).toContain(`- path: ${problem}`);
      expect(settled.text).not.toContain('pwned');
      expect(log.ofType('tool.permission.requested')).toHaveLength(0);
      expect(log.ofType('tool.started')).toHaveLength(0);
      expect({ root: snapshot(root), outside: snapshot(outside) }).toEqual(before);
      expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n');
    },
  );

  it.each(escapes)('readFile refuses %s as invalid', async (_label, target, problem) => {
    const { settled } = await callTool(workspaceTools({ root }), 'readFile', { path: target() });
    expect(settled.outcome).toBe('invalid');
    expect(settled.text).toContain(`- path: ${problem}`);
    expect(settled.text).not.toContain('top secret');
    expect(settled.text).not.toContain('root:');
  });

  it('listFiles refuses a symlink to / and runCommand refuses a cwd outside', async () => {
    const tools = workspaceTools({ root });
    const listed = await callTool(tools, 'listFiles', { path: 'escape' });
    expect(listed.settled.outcome).toBe('invalid');
    const ran = await callTool(tools, 'runCommand', {
      command: 'touch',
      args: ['pwned'],
      cwd: '..',
    });
    expect(ran.settled.outcome).toBe('invalid');
    expect(ran.log.ofType('tool.started')).toHaveLength(0);
    expect(existsSync(path.join(base, 'pwned'))).toBe(false);
  });
});

describe('readFile', () => {
  it('reads a small file whole, saying it reached the end', async () => {
    writeFileSync(path.join(root, 'a.md'), '# Title\nbody\n');
    const { settled } = await callTool(workspaceTools({ root }), 'readFile', { path: 'a.md' });
    expect(settled).toMatchObject({
      outcome: 'success',
      text: '[a.md: bytes 0-13 of 13; end of file]\n# Title\nbody\n',
    });
  });

  it('reads a bounded window of a large file, reporting the total size and where to go on', async () => {
    writeFileSync(path.join(root, 'big.txt'), '0123456789'.repeat(100_000));
    const tools = workspaceTools({ root, readFile: { defaultBytes: 1_000 } });
    const first = await callTool(tools, 'readFile', { path: 'big.txt' });
    expect(first.settled.text).toBe(
      `[big.txt: bytes 0-1000 of 1000000; 999000 more bytes; continue with offset 1000]\n${'0123456789'.repeat(100)}`,
    );
    const next = await callTool(tools, 'readFile', {
      path: 'big.txt',
      offset: 999_995,
      limit: 100,
    });
    expect(next.settled.text).toBe(
      '[big.txt: bytes 999995-1000000 of 1000000; end of file]\n56789',
    );
  });

  it('refuses a limit over the cap as invalid', async () => {
    writeFileSync(path.join(root, 'a.md'), 'x');
    const tools = workspaceTools({ root, readFile: { maxBytes: 10 } });
    const { settled } = await callTool(tools, 'readFile', { path: 'a.md', limit: 11 });
    expect(settled.outcome).toBe('invalid');
    expect(settled.text).toContain('- limit: Too big: expected number to be <=10');
  });

  it('never cuts a character in half at either edge of the window', async () => {
    writeFileSync(path.join(root, 'u.txt'), 'aé€😀z');
    // bytes: a(0) é(1-2) €(3-5) 😀(6-9) z(10)
    const tools = workspaceTools({ root });
    const head = await callTool(tools, 'readFile', { path: 'u.txt', limit: 4 });
    expect(head.settled.text).toBe(
      '[u.txt: bytes 0-6 of 11; 5 more bytes; continue with offset 6]\naé€',
    );
    const middle = await callTool(tools, 'readFile', { path: 'u.txt', offset: 7, limit: 2 });
    expect(middle.settled.text).toBe('[u.txt: bytes 10-11 of 11; end of file]\nz');
  });

  it('does not show binary files, and says what is wrong with directories and missing files', async () => {
    writeFileSync(path.join(root, 'bin.dat'), Buffer.from([1, 0, 2, 3]));
    mkdirSync(path.join(root, 'dir'));
    const tools = workspaceTools({ root });
    expect((await callTool(tools, 'readFile', { path: 'bin.dat' })).settled.text).toBe(
      '[bin.dat: binary file, 4 bytes; not shown]',
    );
    expect((await callTool(tools, 'readFile', { path: 'dir' })).settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: dir is a directory; use listFiles',
    });
    expect((await callTool(tools, 'readFile', { path: 'nope.md' })).settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: nope.md does not exist',
    });
  });

  it('refuses a named pipe without waiting for a writer', async () => {
    const fifo = path.join(root, 'pipe');
    execFileSync('mkfifo', [fifo]);
    // Should the read block, opening a writer end lets the stuck open return (in afterEach).
    fifoToRelease = fifo;
    const { settled } = await callTool(workspaceTools({ root }), 'readFile', { path: 'pipe' });
    expect(settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: pipe is not a regular file',
    });
  });
});

describe('writeFile', () => {
  it('asks by default and records the checked path in the request', async () => {
    const { requested, settled } = await callTool(workspaceTools({ root }), 'writeFile', {
      path: './docs/../notes/todo.md',
      content: 'buy milk\n',
    });
    expect(requested).toMatchObject({ input: { path: 'notes/todo.md', content: 'buy milk\n' } });
    expect(settled).toMatchObject({
      outcome: 'success',
      text: 'Wrote 9 bytes to notes/todo.md (created).',
    });
    expect(readFileSync(path.join(root, 'notes', 'todo.md'), 'utf8')).toBe('buy milk\n');
    expect(snapshot(root)).toEqual(['notes', 'notes/todo.md']);
  });

  it('replaces an existing file atomically, keeping its mode and leaving no temp file', async () => {
    writeFileSync(path.join(root, 'run.sh'), 'echo old\n', { mode: 0o755 });
    const tools = workspaceTools({ root, permissions: { writeFile: 'allow' } });
    const { settled, requested } = await callTool(tools, 'writeFile', {
      path: 'run.sh',
      content: 'echo new\n',
    });
    expect(requested).toBeUndefined();
    expect(settled.text).toBe('Wrote 9 bytes to run.sh (replaced).');
    expect(readFileSync(path.join(root, 'run.sh'), 'utf8')).toBe('echo new\n');
    expect(statSync(path.join(root, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(snapshot(root)).toEqual(['run.sh']);
  });

  it('writes through a symlink that stays inside the root to its real target', async () => {
    mkdirSync(path.join(root, 'src'));
    symlinkSync(path.join(root, 'src'), path.join(root, 'code'));
    const { settled } = await callTool(workspaceTools({ root }), 'writeFile', {
      path: 'code/a.ts',
      content: 'x',
    });
    expect(settled.text).toBe('Wrote 1 bytes to src/a.ts (created).');
    expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe('x');
  });

  it.each([
    ['254 ASCII bytes', `${'n'.repeat(250)}.txt`],
    ['255 ASCII bytes', `${'n'.repeat(251)}.txt`],
    ['255 bytes of 3-byte characters', '€'.repeat(85)],
  ])(
    'writes, reads and lists a file whose name is %s (the longest names allow)',
    async (_label, name) => {
      const tools = workspaceTools({ root, permissions: { writeFile: 'allow' } });
      const { settled } = await callTool(tools, 'writeFile', {
        path: `long/${name}`,
        content: 'x\n',
      });
      expect(settled).toMatchObject({
        outcome: 'success',
        text: `Wrote 2 bytes to long/${name} (created).`,
      });
      expect(readFileSync(path.join(root, 'long', name), 'utf8')).toBe('x\n');
      expect(readdirSync(path.join(root, 'long'))).toEqual([name]);
      const read = await callTool(tools, 'readFile', { path: `long/${name}` });
      expect(read.settled.text).toBe(`[long/${name}: bytes 0-2 of 2; end of file]\nx\n`);
      const listed = await callTool(tools, 'listFiles', { path: 'long' });
      expect(listed.settled.text).toBe(`[long: 1 entry]\nlong/${name}`);
    },
  );

  it('refuses to write over a directory', async () => {
    mkdirSync(path.join(root, 'dir'));
    const { settled } = await callTool(workspaceTools({ root }), 'writeFile', {
      path: 'dir',
      content: 'x',
    });
    expect(settled).toMatchObject({
      outcome: 'error',
      text: 'The tool failed: dir is a directory',
    });
  });
});

describe('listFiles', () => {
  beforeEach(() => {
    mkdirSync(path.join(root, 'src', 'lib'), { recursive: true });
    mkdirSync(path.join(root, 'node_modules', 'pkg'), { recursive: true });
    mkdirSync(path.join(root, '.git'));
    writeFileSync(path.join(root, 'README.md'), '');
    writeFileSync(path.join(root, 'src', 'index.ts'), '');
    writeFileSync(path.join(root, 'src', 'lib', 'util.ts'), '');
    writeFileSync(path.join(root, 'node_modules', 'pkg', 'index.js'), '');
    symlinkSync('/', path.join(root, 'escape'));
  });

  it('lists one directory, marking directories and symlinks, without node_modules and .git', async () => {
    const { settled } = await callTool(workspaceTools({ root }), 'listFiles', {});
    expect(settled.text).toBe(['[.: 3 entries]', 'README.md', 'escape@', 'src/'].join('\n'));
  });

  it('lists recursively without following symlinks', async () => {
    const { settled } = await callTool(workspaceTools({ root }), 'listFiles', { recursive: true });
    expect(settled.text).toBe(
      [
        '[.: 6 entries]',
        'README.md',
        'escape@',
        'src/',
        'src/index.ts',
        'src/lib/',
        'src/lib/util.ts',
      ].join('\n'),
    );
  });

  it('lists a name with a newline or another control character as a JSON string, one entry a line', async () => {
    const names = [
      'a\nb.txt',
      'tab\there',
      'bell\u0007',
      'del\u007f',
      'ls\u2028x',
      'mail@',
      'plain @ "name"',
    ];
    mkdirSync(path.join(root, 'odd'));
    for (const name of names) writeFileSync(path.join(root, 'odd', name), '');
    mkdirSync(path.join(root, 'odd', 'dir\nname'));
    writeFileSync(path.join(root, 'odd', 'dir\nname', 'inner.txt'), '');
    symlinkSync('inner.txt', path.join(root, 'odd', 'link\n'));
    const { settled } = await callTool(workspaceTools({ root }), 'listFiles', {
      path: 'odd',
      recursive: true,
    });
    expect(settled.text.split('\n')).toEqual([
      '[odd: 10 entries]',
      '"odd/a\\nb.txt"',
      '"odd/bell\\u0007"',
      '"odd/del\\u007f"',
      '"odd/dir\\nname"/',
      '"odd/link\\n"@',
      '"odd/ls\\u2028x"',
      '"odd/mail@"',
      'odd/plain @ "name"',
      '"odd/tab\\there"',
      '"odd/dir\\nname/inner.txt"',
    ]);
  });

  it('lists a path that begins with a quote or begins or ends with white space as a JSON string', async () => {
    for (const name of ['"quoted"', ' lead', 'trail ']) writeFileSync(path.join(root, name), '');
    const { settled } = await callTool(workspaceTools({ root }), 'listFiles', {});
    expect(settled.text.split('\n')).toEqual([
      '[.: 6 entries]',
      '" lead"',
      '"\\"quoted\\""',
      'README.md',
      'escape@',
      'src/',
      '"trail "',
    ]);
  });

  it('shows a path with a newline as a JSON string in the headers of listFiles and readFile', async () => {
    mkdirSync(path.join(root, 'two\nlines'));
    writeFileSync(path.join(root, 'two\nlines', 'f.txt'), 'hi');
    const tools = workspaceTools({ root });
    const listed = await callTool(tools, 'listFiles', { path: 'two\nlines' });
    expect(listed.settled.text).toBe('["two\\nlines": 1 entry]\n"two\\nlines/f.txt"');
    const read = await callTool(tools, 'readFile', { path: 'two\nlines/f.txt' });
    expect(read.settled.text).toBe('["two\\nlines/f.txt": bytes 0-2 of 2; end of file]\nhi');
  });

  it('stops at maxEntries and says how to see more', async () => {
    const { settled } = await callTool(workspaceTools({ root }), 'listFiles', {
      path: 'src',
      recursive: true,
      maxEntries: 2,
    });
    expect(settled.text).toBe(
      [
        '[src: stopped after 2 entries; list a subdirectory or raise maxEntries (up to 2000) to see more]',
        'src/index.ts',
        'src/lib/',
      ].join('\n'),
    );
  });
});

describe('workspaceTools', () => {
  it('defaults read and list to allow, write and run to ask; each can be overridden', () => {
    const defaults = workspaceTools({ root });
    expect([
      defaults.readFile.permission,
      defaults.listFiles.permission,
      defaults.writeFile.permission,
      defaults.runCommand.permission,
    ]).toEqual(['allow', 'allow', 'ask', 'ask']);
    const custom = workspaceTools({
      root,
      permissions: { readFile: 'ask', listFiles: 'deny', writeFile: 'allow', runCommand: 'deny' },
    });
    expect([
      custom.readFile.permission,
      custom.listFiles.permission,
      custom.writeFile.permission,
      custom.runCommand.permission,
    ]).toEqual(['ask', 'deny', 'allow', 'deny']);
  });
});
