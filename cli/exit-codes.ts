/**
 * What the `turnlog` CLI's exit status means, one table for the code and for `--help`
 * (README, "Operating turnlog"). A script tells "nothing to do" (0) from "found something" (1)
 * from "could not look" (2 and up).
 */
export const exitCodes = {
  ok: { code: 0, meaning: 'done; nothing found that needs attention' },
  found: {
    code: 1,
    meaning: 'check named a run this code cannot continue, or replay found a difference',
  },
  usage: {
    code: 2,
    meaning: 'the command line is wrong (unknown command or option, a missing argument)',
  },
  notFound: { code: 3, meaning: 'no such session, call or unfinished run' },
  refused: {
    code: 4,
    meaning:
      "the runtime's own checks refused the action (a decision nobody owes, a different one already made, a damaged session), or import refused an archive (another history of the session, a cut file)",
  },
  store: {
    code: 5,
    meaning:
      'the store cannot be opened or read (a folder another process holds, a database that does not answer)',
  },
  runtimeModule: {
    code: 6,
    meaning: 'the --runtime module cannot be loaded or does not export createRuntime options',
  },
  internal: { code: 70, meaning: 'an unexpected error (a bug: please report it with its output)' },
  interrupted: { code: 130, meaning: 'interrupted (Ctrl-C)' },
} as const;

/** The name of an exit status in `exitCodes`. */
export type ExitName = keyof typeof exitCodes;
