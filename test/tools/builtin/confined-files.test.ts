import {
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  listInside,
  openInside,
  temporaryName,
  writeInside,
} from '../../../tools/builtin/confined-files.ts';
import {
  type Confinement,
  defaultConfinement,
  openWorkspace,
  type Workspace,
  type WorkspacePath,
} from '../../../tools/builtin/workspace-path.ts';
import { twinWorkspace } from '../helpers/call-tool.ts';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  ({ base, root, outside } = twinWorkspace());
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const refusal = (relative: string) =>
  `${relative} was refused: while it was being opened, it or a folder on its path was moved or replaced by a symlink, which could lead outside the workspace. Nothing was read or written there; check the path and try again`;

/** Every path under `directory`, symlinks not followed. */
function tree(directory: string): string[] {
  return readdirSync(directory, { recursive: true }).map(String).sort();
}

function checked(workspace: Workspace, requested: string): WorkspacePath {
  return workspace.resolveOrThrow(requested);
}

/** What the walk meets when another process swaps `root/dir` for a symlink after the check. */
function swapDirForSymlink() {
  renameSync(path.join(root, 'dir'), path.join(root, 'dir.aside'));
  symlinkSync(path.join(outside, 'dir'), path.join(root, 'dir'));
}

async function readAll(workspace: Workspace, target: WorkspacePath): Promise<string> {
  const handle = await openInside(workspace, target, constants.O_RDONLY);
  try {
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

it('uses /proc/self/fd on Linux', () => {
  expect(defaultConfinement()).toBe(process.platform === 'linux' ? 'proc' : 'inode');
  expect(openWorkspace(root).confinement).toBe(defaultConfinement());
});

describe.each<Confinement>(['proc', 'inode'])('confined files (%s)', (confinement) => {
  let workspace: Workspace;

  beforeEach(() => {
    workspace = openWorkspace(root, { confinement });
  });

  it('reads, writes (creating folders) and lists inside the root', async () => {
    expect(await readAll(workspace, checked(workspace, 'dir/file.txt'))).toBe('inside\n');
    expect(await writeInside(workspace, checked(workspace, 'new/deep/a.txt'), 'a\n')).toBe(
      'created',
    );
    expect(await writeInside(workspace, checked(workspace, 'new/deep/a.txt'), 'b\n')).toBe(
      'replaced',
    );
    expect(readFileSync(path.join(root, 'new', 'deep', 'a.txt'), 'utf8')).toBe('b\n');
    expect((await listInside(workspace, 'new/deep')).map((entry) => entry.name)).toEqual(['a.txt']);
    expect(tree(root)).toEqual(['dir', 'dir/file.txt', 'new', 'new/deep', 'new/deep/a.txt']);
  });

  it('keeps the mode of a replaced file', async () => {
    writeFileSync(path.join(root, 'run.sh'), 'old\n', { mode: 0o751 });
    await writeInside(workspace, checked(workspace, 'run.sh'), 'new\n');
    expect(statSync(path.join(root, 'run.sh')).mode & 0o777).toBe(0o751);
  });

  it('refuses a folder swapped for a symlink after the check, reading and writing nothing outside', async () => {
    const file = checked(workspace, 'dir/file.txt');
    const created = checked(workspace, 'dir/new.txt');
    const deeper = checked(workspace, 'dir/sub/new.txt');
    const folder = checked(workspace, 'dir');
    swapDirForSymlink();
    const before = tree(outside);
    await expect(readAll(workspace, file)).rejects.toThrow(refusal('dir'));
    await expect(writeInside(workspace, created, 'pwned')).rejects.toThrow(refusal('dir'));
    await expect(writeInside(workspace, deeper, 'pwned')).rejects.toThrow(refusal('dir'));
    await expect(listInside(workspace, folder.relative)).rejects.toThrow(refusal('dir'));
    expect(tree(outside)).toEqual(before);
    expect(readFileSync(path.join(outside, 'dir', 'file.txt'), 'utf8')).toBe('OUTSIDE SECRET\n');
  });

  it('refuses a file swapped for a symlink after the check', async () => {
    const file = checked(workspace, 'dir/file.txt');
    rmSync(path.join(root, 'dir', 'file.txt'));
    symlinkSync(path.join(outside, 'dir', 'file.txt'), path.join(root, 'dir', 'file.txt'));
    await expect(readAll(workspace, file)).rejects.toThrow(refusal('dir/file.txt'));
    await expect(writeInside(workspace, file, 'pwned')).rejects.toThrow(refusal('dir/file.txt'));
    expect(readFileSync(path.join(outside, 'dir', 'file.txt'), 'utf8')).toBe('OUTSIDE SECRET\n');
    expect(tree(path.join(root, 'dir'))).toEqual(['file.txt']);
  });

  it('refuses everything once the root itself is reached through a symlink (its folder moved)', async () => {
    const nestedBase = path.join(base, 'a');
    mkdirSync(path.join(nestedBase, 'root'), { recursive: true });
    writeFileSync(path.join(nestedBase, 'root', 'x.txt'), 'x');
    const nested = openWorkspace(path.join(nestedBase, 'root'), { confinement });
    const target = checked(nested, 'x.txt');
    renameSync(nestedBase, path.join(base, 'b'));
    symlinkSync(path.join(base, 'b'), nestedBase);
    await expect(readAll(nested, target)).rejects.toThrow(refusal('x.txt'));
    await expect(writeInside(nested, target, 'y')).rejects.toThrow(refusal('x.txt'));
    await expect(listInside(nested, '.')).rejects.toThrow(refusal('.'));
    expect(readFileSync(path.join(base, 'b', 'root', 'x.txt'), 'utf8')).toBe('x');
    expect(readdirSync(path.join(base, 'b', 'root'))).toEqual(['x.txt']);
  });

  it('says when a folder on the path is a file or is missing', async () => {
    writeFileSync(path.join(root, 'plain.txt'), '');
    await expect(
      writeInside(workspace, checked(workspace, 'plain.txt/a.txt'), 'x'),
    ).rejects.toThrow(/^plain\.txt is not a directory$/);
    const gone = checked(workspace, 'dir/file.txt');
    rmSync(path.join(root, 'dir'), { recursive: true });
    await expect(readAll(workspace, gone)).rejects.toThrow(/^dir does not exist$/);
  });

  it('names the path and the error code when the file system refuses a name', async () => {
    const long = 'x'.repeat(256);
    const unchecked = (relative: string): WorkspacePath => ({
      absolute: path.join(root, relative),
      relative,
      exists: false,
    });
    await expect(writeInside(workspace, unchecked(long), 'x')).rejects.toThrow(
      new RegExp(`^${long} cannot be written \\(ENAMETOOLONG\\)$`),
    );
    await expect(writeInside(workspace, unchecked(`${long}/a.txt`), 'x')).rejects.toThrow(
      new RegExp(`^${long} cannot be opened \\(ENAMETOOLONG\\)$`),
    );
  });

  it('refuses to write over a folder and leaves no temporary file after a failure', async () => {
    await expect(writeInside(workspace, checked(workspace, 'dir'), 'x')).rejects.toThrow(
      /^dir is a directory$/,
    );
    expect(tree(root)).toEqual(['dir', 'dir/file.txt']);
  });
});

describe('temporaryName', () => {
  it('puts the name between a dot and a random suffix', () => {
    expect(temporaryName('a.txt', '0123456789ab')).toBe('.a.txt.0123456789ab.tmp');
  });

  it('stays within 255 bytes for a 255-byte name, cutting at a character boundary', () => {
    const ascii = temporaryName('x'.repeat(255), '0123456789ab');
    expect(Buffer.byteLength(ascii)).toBe(255);
    expect(ascii).toBe(`.${'x'.repeat(237)}.0123456789ab.tmp`);
    // '€' is 3 bytes: 79 fit in the 237 bytes left (237 = 79 × 3).
    const euros = temporaryName('€'.repeat(85), '0123456789ab');
    expect(euros).toBe(`.${'€'.repeat(79)}.0123456789ab.tmp`);
    // '😀' is 4 bytes: 59 fit (236), never half of one.
    const faces = temporaryName('😀'.repeat(63), '0123456789ab');
    expect(faces).toBe(`.${'😀'.repeat(59)}.0123456789ab.tmp`);
    expect(Buffer.byteLength(faces)).toBe(254);
  });
});
