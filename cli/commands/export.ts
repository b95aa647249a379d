import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StoreInputError } from '../../store/event-store.ts';
import { writeArchiveFile } from '../../store/retention/archive-files.ts';
import { exportSession } from '../../store/retention/session-archive.ts';
import { CliError } from '../cli-error.ts';
import type { CommandDefinition } from '../command-definition.ts';

/** `turnlog export SESSION [--out FILE|DIR]`: one session as a session archive. */
export const exportCommand: CommandDefinition = {
  name: 'export',
  summary:
    'write one session as a JSON Lines archive (what purge --archive writes, what import reads)',
  details:
    'The archive is a header line ({"format":"turnlog.session-archive/1","sessionId":…,"facts":n}) and then every fact as stored, one per line. Without --out it goes to stdout; --out DIR writes DIR/<session>.jsonl durably; --out FILE writes FILE. With --json, --out is needed and stdout says what was written.',
  args: [{ name: 'SESSION', description: 'the session id' }],
  options: [
    { name: 'out', value: 'FILE|DIR', description: 'where to write the archive (default: stdout)' },
  ],
  uses: { store: true, runtime: 'none' },
  examples: [['turnlog export s-42 --out ./archives', 'writes ./archives/s-42.jsonl']],
  async run(context) {
    const sessionId = context.args.SESSION as string;
    const out = typeof context.options.out === 'string' ? context.options.out : undefined;
    if (context.json && out === undefined) {
      throw new CliError({
        message:
          'turnlog export --json: give --out FILE or DIR (stdout carries the JSON result, not the archive)',
        exit: 'usage',
      });
    }
    const text = await exportSession(await context.store(), sessionId).catch((error: unknown) => {
      if (!StoreInputError.isInstance(error)) throw error;
      throw new CliError({ message: `turnlog export: ${error.message}`, exit: 'notFound' });
    });
    if (out === undefined) {
      context.output.line(text.slice(0, -1));
      return 'ok';
    }
    const isDir = await stat(out).then(
      (found) => found.isDirectory(),
      () => false,
    );
    const file = isDir ? await writeArchiveFile(out, sessionId, text) : path.resolve(out);
    if (!isDir) await writeFile(file, text);
    const facts = text.split('\n').length - 2;
    if (context.json) context.output.json({ sessionId, facts, file });
    else context.output.line(`Wrote session ${sessionId} (${facts} facts) to ${file}.`);
    return 'ok';
  },
};
