// npm scripts run on the `node@24` devDependency; an install that skipped its
// install script would silently fall back to the machine's Node, which is too old.
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(
    `turnlog needs Node >= 22 (found ${process.versions.node}). Run \`npm install\` with scripts enabled so the node@24 devDependency installs, or use Node 22+.`,
  );
  process.exit(1);
}
