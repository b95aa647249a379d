import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { WorkspaceRootError } from '../tool-errors.ts';

/** A path inside the workspace, checked segment by segment. */
export interface WorkspacePath {
  /** The real absolute path (symlinks resolved) the operation must use. */
  absolute: string;
  /** The same path relative to the root, with `/` separators; `.` for the root itself. */
  relative: string;
  /** False when the path (or a parent) does not exist yet. */
  exists: boolean;
}

/**
 * How the workspace tools keep a file operation inside the root while other processes change
 * folders under it (tools/builtin/confined-files.ts).
 *
 * - `'proc'` (Linux): folders are opened one segment at a time from the root with `O_NOFOLLOW`,
 *   each through the one before it (`/proc/self/fd/N/name`: the kernel resolves only `name`,
 *   inside a folder already held open, as `openat` and `renameat` do). A symlink swapped in
 *   for a folder is refused, not followed. The file or folder finally used is then located
 *   with `readlink /proc/self/fd/N` and must be inside the root.
 * - `'inode'` (systems without `/proc/self/fd`, such as macOS): plain paths; the file or folder
 *   finally used must have the device and inode of what is at its expected path, whose folder
 *   `realpath` resolves to itself. A folder swapped for a symlink and back between the open and
 *   that check is not caught, and an empty folder or temporary file created through such a
 *   swap stays where it landed.
 */
export type Confinement = 'proc' | 'inode';

/** `'proc'` where `/proc/self/fd` can be read (Linux), else `'inode'`. */
export function defaultConfinement(): Confinement {
  try {
    readdirSync('/proc/self/fd');
    return 'proc';
  } catch {
    return 'inode';
  }
}

/** One workspace root, realpath'd once, and the check every path argument goes through. */
export interface Workspace {
  /** The real absolute path of the root. */
  root: string;
  /** How file operations are kept inside the root (see `Confinement`). */
  confinement: Confinement;
  /**
   * Resolves `requested` (relative to the root, or absolute inside it). Returns the problem as
   * a sentence, naming no value, when it leaves the root: `..`, an absolute path elsewhere, or a
   * symlink anywhere along the path (the last segment too) whose target is outside the root or
   * missing. Touches nothing but `lstat`/`realpath`.
   */
  resolve(requested: string): WorkspacePath | { problem: string };
  /** Like `resolve`, but throws (for `execute`, which checks again right before acting). */
  resolveOrThrow(requested: string): WorkspacePath;
  /**
   * A zod schema for a path argument: the model sends a string; the validated value is the
   * checked path relative to the root. A path that leaves the root fails validation, so the
   * call settles `invalid` before anything is touched.
   */
  pathSchema(description: string): z.ZodType<string, string>;
}

/**
 * Opens a workspace root for the built-in tools. Throws `WorkspaceRootError` when the root does
 * not exist or is not a directory.
 *
 * The path check runs at validation and again right before each operation; the operation itself
 * then goes through confined-files.ts, which refuses a folder swapped for a symlink after the
 * check (see `Confinement`). Hard links are not detected: a hard link inside the root to a
 * file elsewhere reads and writes that file.
 */
export function openWorkspace(
  root: string,
  { confinement = defaultConfinement() }: { confinement?: Confinement } = {},
): Workspace {
  let real: string;
  try {
    real = realpathSync(root);
    if (!statSync(real).isDirectory()) throw new Error('not a directory');
  } catch (error) {
    throw new WorkspaceRootError({
      message: `workspaceTools: the root ${root} is not an existing directory (${(error as Error).message}); create it or pass another root`,
      root,
      cause: error,
    });
  }

  const resolve = (requested: string) => resolveInside(real, requested);

  return {
    root: real,
    confinement,
    resolve,
    resolveOrThrow(requested) {
      const resolved = resolve(requested);
      if ('problem' in resolved) {
        throw new Error(`Refused ${JSON.stringify(requested)}: ${resolved.problem}`);
      }
      return resolved;
    },
    pathSchema(description) {
      return z
        .string()
        .min(1)
        .describe(description)
        .transform((requested, context) => {
          const resolved = resolve(requested);
          if ('problem' in resolved) {
            context.addIssue({ code: 'custom', message: resolved.problem });
            return z.NEVER;
          }
          return resolved.relative;
        });
    },
  };
}

/**
 * `requested` checked against the real root `real`, segment by segment (see `Workspace.resolve`):
 * a symlink on the way is followed only to a target inside the root; the first missing segment
 * ends the walk, as what follows will be created under a folder already checked.
 */
function resolveInside(real: string, requested: string): WorkspacePath | { problem: string } {
  if (requested.includes('\0')) return { problem: 'the path contains a NUL character' };
  const lexical = path.resolve(real, requested);
  if (!isInside(real, lexical)) {
    return {
      problem: path.isAbsolute(requested)
        ? 'the path is absolute and outside the workspace root; use a path relative to the workspace root'
        : 'the path leaves the workspace root (..); use a path inside the workspace root',
    };
  }
  const segments = path.relative(real, lexical).split(path.sep).filter(Boolean);
  let current = real;
  for (const [index, segment] of segments.entries()) {
    const next = path.join(current, segment);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // The rest does not exist yet: it will be created under `current`, already checked.
        const absolute = path.join(current, ...segments.slice(index));
        return { absolute, relative: relativeTo(real, absolute), exists: false };
      }
      return { problem: `the path cannot be checked (${code ?? 'unknown error'})` };
    }
    if (!isLink) {
      current = next;
      continue;
    }
    let target: string;
    try {
      target = realpathSync(next);
    } catch {
      return { problem: 'the path goes through a symlink whose target does not exist' };
    }
    if (!isInside(real, target)) {
      return {
        problem: 'the path goes through a symlink that points outside the workspace root',
      };
    }
    current = target;
  }
  return { absolute: current, relative: relativeTo(real, current), exists: true };
}

/** True when `candidate` (absolute) is `root` or below it. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === '' ||
    (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  );
}

/** `absolute` as a `/`-separated path relative to `root` (`.` for the root itself). */
function relativeTo(root: string, absolute: string): string {
  return path.relative(root, absolute).split(path.sep).join('/') || '.';
}

/**
 * A workspace-relative path as the tools show it to the model: as it is, or as a JSON string
 * literal (`"a\nb.txt"`) when it could be misread — it holds a control character (a newline
 * would split a listing line) or a Unicode line separator, begins with `"`, begins or ends with
 * white space, or ends with `@` (the symlink marker of `listFiles`).
 */
export function displayPath(relative: string): string {
  if (!/[\p{Cc}\u2028\u2029]|^["\s]|[\s@]$/u.test(relative)) return relative;
  // JSON.stringify escapes C0 controls, `"` and `\`; DEL, C1 and the separators it leaves.
  return JSON.stringify(relative).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
