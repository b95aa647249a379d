import { randomBytes } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  realpath,
  rename,
  unlink,
} from 'node:fs/promises';
import path from 'node:path';
import { displayPath, isInside, type Workspace, type WorkspacePath } from './workspace-path.ts';

/** The longest file name, in bytes, that common file systems take (ext4, xfs, btrfs, APFS). */
const maxNameBytes = 255;

const folderFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A folder inside the workspace, held open while names inside it are used. */
interface HeldFolder {
  handle: FileHandle;
  /** Its real absolute path when it was opened. */
  real: string;
  /** Its path relative to the root, as the tools name it. */
  relative: string;
}

/**
 * The error every confined operation throws when a symlink appeared where a folder or file was
 * checked, or an opened one is not inside the root. It has no `code`.
 */
function movedOut(relative: string): Error {
  return new Error(
    `${displayPath(relative)} was refused: while it was being opened, it or a folder on its path was moved or replaced by a symlink, which could lead outside the workspace. Nothing was read or written there; check the path and try again`,
  );
}

function doesNotExist(relative: string): Error {
  return Object.assign(new Error(`${displayPath(relative)} does not exist`), { code: 'ENOENT' });
}

/** A sentence for a failed open or mkdir, keeping the error `code` (listFiles shows it). */
function failure(relative: string, error: unknown, verb = 'opened'): Error {
  const code = codeOf(error) ?? 'unknown error';
  return Object.assign(new Error(`${displayPath(relative)} cannot be ${verb} (${code})`), {
    code,
  });
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Opens the file at `target` with `flags` (`O_NOFOLLOW` is added) and returns its handle once
 * its real location is checked inside the root. Throws with a sentence when it does not exist,
 * when a folder on its path is not a folder, or when anything on the way left the root.
 */
export async function openInside(
  workspace: Workspace,
  target: WorkspacePath,
  flags: number,
): Promise<FileHandle> {
  const { folder, name } = splitTarget(target);
  const held = await holdFolder(workspace, folder, { create: false });
  try {
    let handle: FileHandle;
    try {
      handle = await open(childPath(workspace, held, name), flags | constants.O_NOFOLLOW);
    } catch (error) {
      throw describeOpenError(error, target.relative);
    }
    try {
      await checkOpened(workspace, handle, path.join(held.real, name), target.relative);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  } finally {
    await held.handle.close();
  }
}

/**
 * Writes `content` to `target` whole: a new temporary file next to it (created exclusively,
 * checked inside the root before the first byte and again before the rename), flushed, then
 * renamed over the target and checked once more; a rename that landed outside is undone where
 * the folder is held (`'proc'`). Creates missing folders, each checked. Keeps a replaced file's
 * mode. Returns whether the file was created or replaced.
 */
export async function writeInside(
  workspace: Workspace,
  target: WorkspacePath,
  content: string,
): Promise<'created' | 'replaced'> {
  const { folder, name } = splitTarget(target);
  const held = await holdFolder(workspace, folder, { create: true });
  try {
    const existing = await lstat(childPath(workspace, held, name)).catch((error: unknown) => {
      if (codeOf(error) === 'ENOENT') return undefined;
      throw failure(target.relative, error, 'written');
    });
    if (existing?.isDirectory()) throw new Error(`${displayPath(target.relative)} is a directory`);
    if (existing?.isSymbolicLink()) throw movedOut(target.relative);
    const temporary = temporaryName(name, randomBytes(6).toString('hex'));
    const temporaryPath = childPath(workspace, held, temporary);
    // O_EXCL creates a new file and never follows an existing name or symlink.
    const handle = await open(
      temporaryPath,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o644,
    ).catch((error: unknown) => {
      throw failure(target.relative, error, 'written');
    });
    let renamed = false;
    try {
      await checkOpened(workspace, handle, path.join(held.real, temporary), target.relative);
      if (existing !== undefined) await handle.chmod(existing.mode & 0o7777);
      await handle.writeFile(content, 'utf8');
      await handle.sync();
      await checkOpened(workspace, handle, path.join(held.real, temporary), target.relative);
      await rename(temporaryPath, childPath(workspace, held, name));
      renamed = true;
      try {
        await checkOpened(workspace, handle, path.join(held.real, name), target.relative);
      } catch (error) {
        // The folder left the root between the last check and the rename. Where it is held
        // open the written file can be found again and removed; with 'inode' it cannot.
        if (workspace.confinement === 'proc') await unlink(childPath(workspace, held, name));
        throw error;
      }
    } catch (error) {
      if (!renamed) await unlink(temporaryPath).catch(() => {});
      throw error;
    } finally {
      await handle.close();
    }
    return existing === undefined ? 'created' : 'replaced';
  } finally {
    await held.handle.close();
  }
}

/**
 * The entries of the folder at `relative` (a checked path inside the root), read through the
 * held folder. Throws when it is not a folder or left the root.
 */
export async function listInside(workspace: Workspace, relative: string): Promise<Dirent[]> {
  const held = await holdFolder(workspace, segmentsOf(relative), { create: false });
  try {
    await checkOpened(workspace, held.handle, held.real, relative);
    return await readdir(workspace.confinement === 'proc' ? procPath(held.handle) : held.real, {
      withFileTypes: true,
    });
  } finally {
    await held.handle.close();
  }
}

/**
 * `.<name>.<random>.tmp`, with `name` cut (at a character boundary) so the whole stays within
 * the 255-byte name limit: a target name of up to 255 bytes can be written.
 */
export function temporaryName(name: string, random: string): string {
  const suffix = `.${random}.tmp`;
  const room = maxNameBytes - 1 - Buffer.byteLength(suffix);
  let kept = '';
  let bytes = 0;
  for (const character of name) {
    bytes += Buffer.byteLength(character);
    if (bytes > room) break;
    kept += character;
  }
  return `.${kept}${suffix}`;
}

function segmentsOf(relative: string): string[] {
  return relative === '.' ? [] : relative.split('/');
}

function splitTarget(target: WorkspacePath): { folder: string[]; name: string } {
  const segments = segmentsOf(target.relative);
  const name = segments.pop();
  if (name === undefined) throw new Error('the workspace root is a directory, not a file');
  return { folder: segments, name };
}

function procPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

/** The path that names `name` inside `folder`: through its handle (`'proc'`) or its path. */
function childPath(workspace: Workspace, folder: HeldFolder, name: string): string {
  return workspace.confinement === 'proc'
    ? `${procPath(folder.handle)}/${name}`
    : path.join(folder.real, name);
}

/**
 * Opens the root, then each of `segments` inside the folder before it (`O_NOFOLLOW`: a symlink
 * is refused, never followed). With `create`, a missing folder is created first. The folders
 * are not located one by one: the file or folder finally used is (`checkOpened`), and a folder
 * on its path that left the root takes it outside too.
 */
async function holdFolder(
  workspace: Workspace,
  segments: readonly string[],
  { create }: { create: boolean },
): Promise<HeldFolder> {
  let held: HeldFolder = {
    handle: await open(workspace.root, folderFlags).catch((error: unknown) => {
      throw failure('.', error);
    }),
    real: workspace.root,
    relative: '.',
  };
  try {
    for (const segment of segments) {
      const relative = held.relative === '.' ? segment : `${held.relative}/${segment}`;
      const next = childPath(workspace, held, segment);
      let handle: FileHandle;
      try {
        handle = await open(next, folderFlags);
      } catch (error) {
        if (codeOf(error) !== 'ENOENT' || !create)
          throw await describeFolderError(error, next, relative);
        await mkdir(next).catch((mkdirError: unknown) => {
          if (codeOf(mkdirError) !== 'EEXIST') throw failure(relative, mkdirError, 'created');
        });
        handle = await open(next, folderFlags).catch(async (reopenError: unknown) => {
          throw await describeFolderError(reopenError, next, relative);
        });
      }
      await held.handle.close();
      held = { handle, real: path.join(held.real, segment), relative };
    }
    return held;
  } catch (error) {
    await held.handle.close();
    throw error;
  }
}

/** Throws `movedOut` unless the open `handle` is inside the root (see `Confinement`). */
async function checkOpened(
  workspace: Workspace,
  handle: FileHandle,
  expected: string,
  relative: string,
): Promise<void> {
  if (workspace.confinement === 'proc') {
    const location = await readlink(procPath(handle));
    if (!isInside(workspace.root, location)) throw movedOut(relative);
    return;
  }
  const [opened, there, folder] = await Promise.all([
    handle.stat(),
    lstat(expected).catch(() => undefined),
    realpath(path.dirname(expected)).catch(() => undefined),
  ]);
  const same = there !== undefined && there.dev === opened.dev && there.ino === opened.ino;
  if (!same || folder !== path.dirname(expected) || !isInside(workspace.root, expected)) {
    throw movedOut(relative);
  }
}

async function describeFolderError(error: unknown, at: string, relative: string): Promise<Error> {
  const code = codeOf(error);
  if (code === 'ENOENT') return doesNotExist(relative);
  if (code === 'ENOTDIR' || code === 'ELOOP') {
    // O_DIRECTORY | O_NOFOLLOW fails the same way for a file and for a symlink.
    const stats = await lstat(at).catch(() => undefined);
    if (stats?.isSymbolicLink()) return movedOut(relative);
    return Object.assign(new Error(`${displayPath(relative)} is not a directory`), {
      code: 'ENOTDIR',
    });
  }
  return failure(relative, error);
}

function describeOpenError(error: unknown, relative: string): Error {
  const code = codeOf(error);
  if (code === 'ENOENT') return doesNotExist(relative);
  if (code === 'ELOOP') return movedOut(relative);
  return failure(relative, error);
}
