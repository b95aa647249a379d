import type { BuiltCli } from './built-cli.ts';

/**
 * Writes a `--runtime` module into the build's folder, as an application would: it imports the
 * built package and zod, and exports its createRuntime options by default. The tool is the
 * planted sessions' `sendInvoice` (cli-sessions.ts) unless a change is planted: `renamed` (it is
 * `issueInvoice` now), `schemaChanged` (a required `amountCents`), `denyPolicy` (a policy that
 * denies every invoice). Its `execute` appends a line to `marker`, to prove where it ran. The
 * model answers "Invoice sent." to whatever it is asked.
 */
export function runtimeModule(
  cli: BuiltCli,
  name: string,
  change: {
    renamed?: boolean;
    schemaChanged?: boolean;
    denyPolicy?: boolean;
    marker?: string;
  } = {},
): string {
  const schema = change.schemaChanged
    ? 'z.object({ customer: z.string(), amountCents: z.number() })'
    : 'z.object({ customer: z.string() })';
  return cli.file(
    `${name}.mjs`,
    `import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTool, scriptedModel } from './index.js';

const sendInvoice = defineTool({
  description: 'Sends an invoice.',
  inputSchema: ${schema},
  permission: 'ask',
  execute: (input) => {
    ${change.marker === undefined ? '' : `appendFileSync(${JSON.stringify(change.marker)}, 'invoice ' + input.customer + '\\n');`}
    return 'sent to ' + input.customer;
  },
});

export default () => ({
  model: scriptedModel(() => ({ text: 'Invoice sent.' })),
  tools: { ${change.renamed ? 'issueInvoice' : 'sendInvoice'}: sendInvoice },
  ${change.denyPolicy ? "policy: ({ name }) => (name === 'sendInvoice' ? 'deny' : undefined)," : ''}
});
`,
  );
}
