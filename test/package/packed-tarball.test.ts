import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as a user installs it: build, `npm pack`, install the tarball into a fresh app
 * offline, typecheck a strict consumer file against the installed types, and run it. No network:
 * the app's `node_modules` is seeded with turnlog's dependencies and peers as the project's
 * lockfile resolves them (copied from the project's own install), an app lockfile lists them and
 * the tarball, and `npm install --offline` then installs the tarball and checks the tree. Nothing
 * here relies on what the machine's npm cache happens to hold.
 */

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
interface LockedPackage {
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};
const locked = (name: string) => lock.packages[`node_modules/${name}`]?.version ?? 'missing';
const manifestText = readFileSync(join(root, 'package.json'), 'utf8');
const manifest = JSON.parse(manifestText) as {
  name: string;
  version: string;
  files: string[];
  dependencies: Record<string, string>;
  engines: Record<string, string>;
  bin: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  allowScripts: Record<string, boolean>;
};

let work: string;
let staging: string;
let app: string;
let installed: string;

const consumer = `import {
  createRuntime,
  defineTool,
  memoryStore,
  type Reason,
  scriptedModel,
  type TurnResult,
} from 'turnlog';
import { z } from 'zod';

const add = defineTool({
  description: 'Adds two numbers.',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});
const runtime = createRuntime({
  model: scriptedModel([
    { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
    { text: '2 + 3 = 5.' },
  ]),
  tools: { add },
  store: memoryStore(),
  // The policy's input is the tool's validated input: no cast.
  policy: ({ name, input }) => (name === 'add' && input.a < 0 ? 'deny' : undefined),
});
const turn = await runtime.send({ sessionId: 's1', text: 'What is 2 + 3?' });
const result: TurnResult = await turn.done;
const reason: Reason = result.reason;
const facts = await runtime.facts('s1');
console.log(JSON.stringify({ status: result.status, reason, text: result.text, facts: facts.map((fact) => fact.type) }));
await runtime.close();
`;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'turnlog-package-'));
  // A copy of what a pack reads (the manifest, the shipped sources, the build's configuration,
  // the prepack script), built and packed there, so the worktree's own dist/ is left alone.
  staging = join(work, 'turnlog');
  mkdirSync(staging);
  const copied = [
    ...manifest.files.filter((file) => file !== 'dist'),
    'package.json',
    'README.md',
    'tsconfig.json',
    'tsconfig.build.json',
    'scripts/pack-manifest.ts',
  ];
  for (const file of copied) cpSync(join(root, file), join(staging, file), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(staging, 'node_modules'));
  await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(staging, 'tsconfig.build.json')],
    { cwd: staging },
  );
  // Not --ignore-scripts: prepack and postpack are part of what a pack does.
  const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', work], {
    cwd: staging,
  });
  const tarball = join(work, stdout.trim().split('\n').at(-1) ?? '');

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'consumer',
      private: true,
      type: 'module',
      dependencies: {
        turnlog: `file:${tarball}`,
        ai: locked('ai'),
        zod: locked('zod'),
        '@ai-sdk/provider': locked('@ai-sdk/provider'),
        '@ai-sdk/openai': locked('@ai-sdk/openai'),
        '@types/node': locked('@types/node'),
      },
    }),
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2023',
        lib: ['es2023', 'dom'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        allowImportingTsExtensions: true,
        noEmit: true,
        skipLibCheck: false,
        // A Node app: turnlog's HTTP adapter names node:http's types.
        types: ['node'],
      },
      files: ['app.ts', 'quickstart.ts'],
    }),
  );
  writeFileSync(join(app, 'app.ts'), consumer);
  // The README's quickstart, as a user copies it into an app.
  writeFileSync(
    join(app, 'quickstart.ts'),
    readFileSync(join(root, 'examples/quickstart.ts'), 'utf8').replace(
      "from '../index.ts'",
      "from 'turnlog'",
    ),
  );
  const closure = lockfileClosure([
    'lowdb',
    'xstate',
    'ai',
    'zod',
    '@ai-sdk/provider',
    '@ai-sdk/openai',
    '@types/node',
  ]);
  for (const path of closure) {
    cpSync(join(root, path), join(app, path), { recursive: true });
  }
  // The app's lockfile lists what was copied, so `npm install --offline` resolves the tree from
  // it and needs no registry metadata: a fresh machine's npm cache holds only the tarballs `npm
  // ci` fetched, not the package documents an install without a lockfile would ask for.
  writeFileSync(join(app, 'package-lock.json'), JSON.stringify(appLockfile(closure, tarball)));
  await run(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'],
    {
      cwd: app,
    },
  );
  installed = join(app, 'node_modules', 'turnlog');
}, 240_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball in a fresh app', () => {
  it('ships dist, the sources its maps name, the LICENSE and a manifest with peers, and nothing else', () => {
    expect(readdirSync(installed).sort()).toEqual(
      [...manifest.files, 'README.md', 'package.json'].sort(),
    );
    const shipped = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(shipped.dependencies).toEqual(manifest.dependencies);
    expect(Object.keys(shipped.dependencies).sort()).toEqual(['lowdb', 'xstate']);
    expect(shipped.peerDependencies).toMatchObject({
      ai: expect.any(String),
      zod: expect.any(String),
    });
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toMatch(
      /^MIT License\n\nCopyright \(c\) \d{4} turnlog contributors\n/,
    );
  });

  it("typechecks a strict consumer file, and turnlog's own declarations, against the installed types", async () => {
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', app], { cwd: app }).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    // skipLibCheck is off, so turnlog's .d.ts files are checked too; other packages'
    // declarations (xstate's, @ai-sdk/provider's) have errors of their own under this config.
    const errors = result.stdout.split('\n').filter((line) => /: error TS\d+:/.test(line));
    const ours = errors.filter(
      (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/turnlog/'),
    );
    expect(ours).toEqual([]);
    // The check ran over the dependencies' declarations too (so over turnlog's).
    expect(errors.some((line) => line.startsWith('node_modules/xstate/'))).toBe(true);
  }, 120_000);

  it('runs the consumer: a tool turn completes', async () => {
    const { stdout } = await run(process.execPath, ['app.ts'], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({
      status: 'completed',
      reason: 'end_turn',
      text: '2 + 3 = 5.',
      facts: [
        'run.started',
        'step.started',
        'step.completed',
        'tool.permission.decided',
        'tool.started',
        'tool.settled',
        'step.started',
        'step.completed',
        'run.ended',
      ],
    });
  });

  it('links the turnlog bin, which runs from the installed package on a store of the app', async () => {
    const bin = join(app, 'node_modules', '.bin', 'turnlog');
    expect(statSync(bin).mode & 0o111).not.toBe(0);
    const help = await run(process.execPath, [bin, '--help'], { cwd: app });
    expect(help.stdout).toMatch(/^ {2}sessions +/m);
    mkdirSync(join(app, 'cli-store'), { recursive: true });
    const { stdout } = await run(
      process.execPath,
      [bin, 'sessions', '--dir', 'cli-store', '--json'],
      {
        cwd: app,
      },
    );
    expect(JSON.parse(stdout)).toEqual({ sessions: [], total: 0 });
  });

  it('fails require() with a message saying turnlog is ESM-only and how to import it', async () => {
    const failure = await run(process.execPath, ['-e', "require('turnlog')"], { cwd: app }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain(
      'turnlog is ESM-only and cannot be loaded with require(). Import it from an ES module (a .mjs file, or "type": "module" in package.json): import { createRuntime } from \'turnlog\'; or, from CommonJS: const { createRuntime } = await import(\'turnlog\');',
    );
  });

  it('has source maps that resolve: every map embeds the sources it names', () => {
    const maps = listFiles(join(installed, 'dist')).filter((file) => file.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(40);
    for (const map of maps) {
      const parsed = JSON.parse(readFileSync(map, 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      expect(parsed.sources.length, map).toBeGreaterThan(0);
      expect(parsed.sourcesContent?.length, map).toBe(parsed.sources.length);
      expect(
        parsed.sourcesContent?.every(
          (content) => typeof content === 'string' && content.length > 0,
        ),
        map,
      ).toBe(true);
    }
  });
});

describe("the packed tarball's manifest", () => {
  it('has the fields tools and registries read: types, main, sideEffects, repository, homepage, bugs', () => {
    const shipped = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(shipped).toMatchObject({
      main: './dist/index.js',
      types: './dist/index.d.ts',
      sideEffects: false,
      exports: {
        '.': {
          types: './dist/index.d.ts',
          import: './dist/index.js',
          require: './dist/require.cjs',
        },
        './package.json': './package.json',
      },
      repository: {
        type: 'git',
        url: expect.stringMatching(/^git\+https:\/\/github\.com\/.+\.git$/),
      },
    });
    const repository = shipped.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(shipped.homepage).toBe(`${repository}#readme`);
    expect(shipped.bugs).toEqual({ url: `${repository}/issues` });
    for (const file of [shipped.main, shipped.types]) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
  });

  it("leaves the dev-only allowScripts out of the tarball, and in the repository's package.json", () => {
    const shipped = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(shipped.allowScripts).toBeUndefined();
    expect(Object.keys(manifest.allowScripts).length).toBeGreaterThan(0);
    // postpack put the staging copy's manifest back byte for byte, and left no backup behind.
    expect(readFileSync(join(staging, 'package.json'), 'utf8')).toBe(manifestText);
    expect(existsSync(join(staging, 'package.json.prepack'))).toBe(false);
  });

  it('exports ./package.json, so tools can read the installed version', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import manifest from 'turnlog/package.json' with { type: 'json' }; console.log(manifest.version);",
      ],
      { cwd: app },
    );
    expect(stdout.trim()).toBe(manifest.version);
  });

  it('asks for no Node older than its dependencies need, and the README says the same', () => {
    const minimum = (range: string | undefined) => Number(/>=\s*(\d+)/.exec(range ?? '')?.[1] ?? 0);
    const ours = minimum(manifest.engines.node);
    const needed = Math.max(
      ...['ai', '@ai-sdk/provider', 'lowdb', 'xstate', 'zod'].map((name) =>
        minimum(
          (lock.packages[`node_modules/${name}`] as { engines?: { node?: string } }).engines?.node,
        ),
      ),
    );
    expect(ours).toBe(needed);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain(`**Node ≥ ${ours}, ESM only.**`);
    expect(readme).toContain(`Node ${ours} or newer on the machine`);
  });
});

describe('declaration maps', () => {
  it('map every declaration file to a shipped source, so go-to-definition opens the TypeScript', () => {
    const declarations = listFiles(join(installed, 'dist')).filter((file) =>
      file.endsWith('.d.ts'),
    );
    expect(declarations.length).toBeGreaterThan(40);
    for (const declaration of declarations) {
      const map = JSON.parse(readFileSync(`${declaration}.map`, 'utf8')) as { sources: string[] };
      expect(map.sources, declaration).toHaveLength(1);
      const source = join(dirname(declaration), map.sources[0] ?? '');
      expect(existsSync(source), `${declaration} → ${source}`).toBe(true);
      expect(source.endsWith('.ts') || source.endsWith('.cts'), source).toBe(true);
    }
    const index = JSON.parse(readFileSync(join(installed, 'dist', 'index.d.ts.map'), 'utf8'));
    expect(index.sources).toEqual(['../index.ts']);
  });
});

describe('consumers by module resolution', () => {
  const consumerSource = `import { createRuntime, memoryStore, scriptedModel, type TurnResult } from 'turnlog';
const runtime = createRuntime({ model: scriptedModel([{ text: 'Hi.' }]), store: memoryStore() });
const done: Promise<TurnResult> = runtime.send({ sessionId: 's', text: 'Hi' }).then((turn) => turn.done);
// @ts-expect-error: the types are found, so a wrong option is an error
createRuntime({ model: scriptedModel([]), stores: memoryStore() });
export { done };
`;

  it.each([
    { resolution: 'node', compiler: 'typescript-5', module: 'esnext' },
    { resolution: 'bundler', compiler: 'typescript', module: 'esnext' },
    { resolution: 'nodenext', compiler: 'typescript', module: 'nodenext' },
  ])(
    'finds the types with moduleResolution "$resolution" ($compiler)',
    async ({ resolution, compiler, module }) => {
      const folder = join(app, `resolution-${resolution}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'consumer.ts'), consumerSource);
      writeFileSync(
        join(folder, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'es2022',
            lib: ['es2023', 'dom'],
            module,
            moduleResolution: resolution,
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: [],
          },
          files: ['consumer.ts'],
        }),
      );
      const tsc = join(root, 'node_modules', compiler, 'bin', 'tsc');
      // TypeScript 7 dropped moduleResolution "node"; the devDependency typescript-5 checks it.
      expect(
        existsSync(tsc),
        `${compiler} is not installed: run npm install (package.json lists it as a devDependency)`,
      ).toBe(true);
      const result = await run(process.execPath, [tsc, '-p', folder, '--pretty', 'false'], {
        cwd: folder,
      }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
      expect(result.stdout.split('\n').filter((line) => /error TS\d+/.test(line))).toEqual([]);
    },
    120_000,
  );
});

describe("the README's quickstart, copied into an app", () => {
  it('typechecks against the installed package and runs offline', async () => {
    const { stdout, stderr } = await run(process.execPath, ['quickstart.ts'], {
      cwd: app,
      env: { ...process.env, OPENAI_API_KEY: '', TURNLOG_DIR: join(app, '.turnlog') },
    });
    expect(stderr).toBe('');
    expect(stdout).toContain('completed (end_turn) in 2 steps. The log:');
    expect(stdout).toContain('It is 18 °C and sunny in Paris: a good day for a walk.');
  });
});

/**
 * The top-level `node_modules/…` paths of `names` and everything they need (dependencies and
 * required peers), resolved through the lockfile as Node would; a nested package travels with
 * the package folder that holds it.
 */
function lockfileClosure(names: string[]): string[] {
  const resolve = (from: string, name: string): string | undefined => {
    for (let base = from; ; ) {
      const path = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
      if (lock.packages[path] !== undefined) return path;
      if (base === '') return undefined;
      const nested = base.lastIndexOf('/node_modules/');
      base = nested === -1 ? '' : base.slice(0, nested);
    }
  };
  const seen = new Set<string>();
  const queue = names.map((name) => resolve('', name));
  for (let path = queue.shift(); queue.length > 0 || path !== undefined; path = queue.shift()) {
    if (path === undefined || seen.has(path)) continue;
    seen.add(path);
    const entry = lock.packages[path] as LockedPackage;
    const peers = Object.keys(entry.peerDependencies ?? {}).filter(
      (name) => entry.peerDependenciesMeta?.[name]?.optional !== true,
    );
    for (const name of [...Object.keys(entry.dependencies ?? {}), ...peers]) {
      queue.push(resolve(path, name));
    }
  }
  return [...seen].filter((path) => path.lastIndexOf('node_modules/') === 0);
}

/** A lockfile for the app: its root and the copied packages (nested ones too), as locked here. */
function appLockfile(closure: string[], tarball: string) {
  const { dependencies } = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const packages: Record<string, unknown> = {
    '': { name: 'consumer', dependencies },
    // turnlog itself too: without it npm would fetch the package documents of its peers.
    'node_modules/turnlog': {
      version: manifest.version,
      resolved: `file:${tarball}`,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      license: 'MIT',
      dependencies: manifest.dependencies,
      engines: manifest.engines,
      // The bin npm links into node_modules/.bin (from the lockfile, as for any package).
      bin: manifest.bin,
      peerDependencies: manifest.peerDependencies,
      peerDependenciesMeta: manifest.peerDependenciesMeta,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!closure.some((top) => path === top || path.startsWith(`${top}/node_modules/`))) continue;
    const {
      dev: _dev,
      devOptional: _devOptional,
      peer: _peer,
      ...kept
    } = entry as LockedPackage & {
      dev?: boolean;
      devOptional?: boolean;
      peer?: boolean;
    };
    packages[path] = kept;
  }
  return { name: 'consumer', lockfileVersion: 3, requires: true, packages };
}

function listFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(folder, entry.name)) : [join(folder, entry.name)],
  );
}
