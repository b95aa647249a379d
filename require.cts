// `require('turnlog')` resolves here, through the "require" condition of package.json's
// "exports": turnlog is an ES module, and this says so (and how to load it) instead of Node's
// ERR_PACKAGE_PATH_NOT_EXPORTED.
const error = new Error(
  'turnlog is ESM-only and cannot be loaded with require(). Import it from an ES module (a .mjs file, or "type": "module" in package.json): import { createRuntime } from \'turnlog\'; or, from CommonJS: const { createRuntime } = await import(\'turnlog\');',
);
Object.assign(error, { code: 'ERR_REQUIRE_ESM' });
throw error;
