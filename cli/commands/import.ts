import { readFile, stat } from 'node:fs/promises';
import { archiveFiles } from '../../store/retention/archive-files.ts';
import { importSession } from '../../store/retention/session-archive.ts';
import { ArchiveFormatError, SessionExistsError } from '../../store/session-retention.ts';
import type { CommandDefinition } from '../command-definition.ts';

/** What `turnlog import` did with one archive file. */
interface ImportedFile {
  file: string;
  sessionId: string | undefined;
  outcome: 'imported' | 'identical' | 'exists' | 'invalid';
  /** Why it was refused (`exists`, `invalid`). */
  message: string | undefined;
}

/** `turnlog import PATH`: session archives (one file, or every *.jsonl of a folder) into the store. */
export const importCommand: CommandDefinition = {
  name: 'import',
  summary: 'import session archives (a .jsonl file, or every one in a folder) into the store',
  details:
    'Each archive is checked whole before anything is written, then stored in one step. A session the store holds with the same facts is left as it is (identical); with other facts it is refused (exists), as is an archive that was cut or edited (invalid). Exit 4 when any archive was refused. Ctrl-C stops between files.',
  args: [{ name: 'PATH', description: 'an archive file, or a folder of them' }],
  options: [],
  uses: { store: true, runtime: 'none' },
  examples: [
    [
      'turnlog import /var/backups/turnlog --database-url $DATABASE_URL',
      "a folder store's archives into PostgreSQL",
    ],
  ],
  async run(context) {
    const target = context.args.PATH as string;
    const files = (await stat(target)).isDirectory() ? await archiveFiles(target) : [target];
    const store = await context.store();
    const progress = context.output.progress('import', files.length);
    const results: ImportedFile[] = [];
    for (const file of files) {
      if (context.signal.aborted) break;
      results.push(await importFile(store, file));
      progress.advance();
    }
    progress.done();
    const refused = results.filter(
      (item) => item.outcome === 'exists' || item.outcome === 'invalid',
    );
    const count = (outcome: ImportedFile['outcome']) =>
      results.filter((item) => item.outcome === outcome).length;
    if (context.json)
      context.output.json({ files: results, stopped: results.length < files.length });
    else {
      for (const item of refused)
        context.output.line(`${item.outcome} ${item.file}: ${item.message}`);
      context.output.line(
        `Imported ${count('imported')}, identical ${count('identical')}, refused ${refused.length} of ${files.length} archives.`,
      );
    }
    if (results.length < files.length) return 'interrupted';
    return refused.length > 0 ? 'refused' : 'ok';
  },
};

async function importFile(
  store: Parameters<typeof importSession>[0],
  file: string,
): Promise<ImportedFile> {
  try {
    const { sessionId, outcome } = await importSession(store, await readFile(file, 'utf8'), {
      file,
    });
    return { file, sessionId, outcome, message: undefined };
  } catch (error) {
    if (SessionExistsError.isInstance(error)) {
      return { file, sessionId: error.sessionId, outcome: 'exists', message: error.message };
    }
    if (ArchiveFormatError.isInstance(error)) {
      return { file, sessionId: undefined, outcome: 'invalid', message: error.message };
    }
    throw error;
  }
}
