import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { displayPath, openWorkspace } from '../../../tools/builtin/workspace-path.ts';
import { WorkspaceRootError } from '../../../tools/tool-errors.ts';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), 'turnlog-ws-')));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  mkdirSync(path.join(root, 'src'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(root, 'src', 'a.ts'), 'export {};\n');
  writeFileSync(path.join(outside, 'secret.txt'), 'top secret\n');
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('openWorkspace', () => {
  it('resolves paths inside the root, relative or absolute, existing or not', () => {
    const workspace = openWorkspace(root);
    expect(workspace.root).toBe(root);
    expect(workspace.resolve('src/a.ts')).toEqual({
      absolute: path.join(root, 'src', 'a.ts'),
      relative: 'src/a.ts',
      exists: true,
    });
    expect(workspace.resolve(path.join(root, 'src'))).toEqual({
      absolute: path.join(root, 'src'),
      relative: 'src',
      exists: true,
    });
    expect(workspace.resolve('.')).toEqual({ absolute: root, relative: '.', exists: true });
    expect(workspace.resolve('src/../new/deep.txt')).toEqual({
      absolute: path.join(root, 'new', 'deep.txt'),
      relative: 'new/deep.txt',
      exists: false,
    });
  });

  it.each([
    [
      '../outside/secret.txt',
      'the path leaves the workspace root (..); use a path inside the workspace root',
    ],
    [
      'src/../../x',
      'the path leaves the workspace root (..); use a path inside the workspace root',
    ],
    [
      '/etc/passwd',
      'the path is absolute and outside the workspace root; use a path relative to the workspace root',
    ],
    ['a\0b', 'the path contains a NUL character'],
  ])('refuses %j', (requested, problem) => {
    expect(openWorkspace(root).resolve(requested)).toEqual({ problem });
  });

  it('refuses a symlink to / as the last segment and along the path', () => {
    symlinkSync('/', path.join(root, 'escape'));
    const workspace = openWorkspace(root);
    const problem = 'the path goes through a symlink that points outside the workspace root';
    expect(workspace.resolve('escape')).toEqual({ problem });
    expect(workspace.resolve('escape/etc/passwd')).toEqual({ problem });
  });

  it('refuses a not-yet-existing file under a symlinked parent directory that points out', () => {
    symlinkSync(outside, path.join(root, 'linked'));
    const workspace = openWorkspace(root);
    expect(workspace.resolve('linked/new.txt')).toEqual({
      problem: 'the path goes through a symlink that points outside the workspace root',
    });
    expect(workspace.resolve('linked/deeper/new.txt')).toEqual({
      problem: 'the path goes through a symlink that points outside the workspace root',
    });
  });

  it('refuses a dangling symlink (writing through it would create its target)', () => {
    symlinkSync(path.join(outside, 'not-there.txt'), path.join(root, 'dangling'));
    expect(openWorkspace(root).resolve('dangling')).toEqual({
      problem: 'the path goes through a symlink whose target does not exist',
    });
  });

  it('follows a symlink that stays inside the root to its real path', () => {
    symlinkSync(path.join(root, 'src'), path.join(root, 'code'));
    expect(openWorkspace(root).resolve('code/a.ts')).toEqual({
      absolute: path.join(root, 'src', 'a.ts'),
      relative: 'src/a.ts',
      exists: true,
    });
  });

  it('realpaths the root once, so a root given through a symlink works', () => {
    symlinkSync(root, path.join(base, 'root-link'));
    const workspace = openWorkspace(path.join(base, 'root-link'));
    expect(workspace.root).toBe(root);
    expect(workspace.resolve('src/a.ts')).toMatchObject({ relative: 'src/a.ts', exists: true });
  });

  it('throws WorkspaceRootError for a root that does not exist or is a file', () => {
    expect(() => openWorkspace(path.join(base, 'missing'))).toThrow(WorkspaceRootError);
    let caught: unknown;
    try {
      openWorkspace(path.join(root, 'src', 'a.ts'));
    } catch (error) {
      caught = error;
    }
    expect(WorkspaceRootError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toContain('is not an existing directory (not a directory)');
  });
});

describe('displayPath', () => {
  it.each([
    ['src/a.ts', 'src/a.ts'],
    ['a b/c "d" e@f', 'a b/c "d" e@f'],
    ['a\nb', '"a\\nb"'],
    ['cr\r', '"cr\\r"'],
    ['nel\u0085', '"nel\\u0085"'],
    ['ps\u2029', '"ps\\u2029"'],
    ['"q', '"\\"q"'],
    ['back\\slash\n', '"back\\\\slash\\n"'],
    ['\tx', '"\\tx"'],
    ['x\u00a0', '"x\u00a0"'],
    ['link@', '"link@"'],
  ])('shows %j as %s', (relative, shown) => {
    expect(displayPath(relative)).toBe(shown);
    // What is quoted is a JSON string that gives the path back.
    if (shown !== relative) expect(JSON.parse(shown)).toBe(relative);
  });
});
