// The CLI as one ES module (dist/bundle/stalewrite.js, which bin/stalewrite.js imports): dist/cli
// and everything it imports at start-up, yargs and the ajv runtime parts included, so a plain
// `analyze` compiles one file instead of resolving, reading and compiling some 130 modules. What
// the CLI imports lazily (other profiles and mappings, reporters, workers' setup, partitions,
// merge) stays lazy: a chunk of its own beside it, loaded by the same import() as before. Worker
// threads still run the compiled files in dist/ (their URLs point there). The library entry
// (dist/index.js) is not bundled. Called by scripts/build.mjs after tsc.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { createRequire, isBuiltin } from 'node:module';
import { rolldown } from 'rolldown';

/** The directory the CLI bundle is written to (one level under dist/, as dist/cli is: URLs relative to import.meta.url, such as ../../docs, resolve the same). */
export const BUNDLE_DIR = join('dist', 'bundle');

/**
 * Rewrite `code` of module `id` by exact text replacements, each of which must match exactly once:
 * a dependency that changed under a replacement fails the build instead of going unpatched.
 */
function patch(code, id, replacements) {
  for (const [from, to] of replacements) {
    const at = code.indexOf(from);
    if (at === -1 || code.indexOf(from, at + 1) !== -1) throw new Error(`bundle: ${id}: expected exactly one "${from}" to patch`);
    code = code.slice(0, at) + to + code.slice(at + from.length);
  }
  return code;
}

/** The nearest package.json above a file in node_modules: its directory, name and version. */
function packageOf(file) {
  for (let dir = dirname(file); dir.includes(`${sep}node_modules${sep}`); dir = dirname(dir)) {
    const pj = join(dir, 'package.json');
    if (!existsSync(pj)) continue;
    const { name, version, license } = JSON.parse(readFileSync(pj, 'utf8'));
    if (name !== undefined && version !== undefined) return { dir, name, version, license };
  }
  return undefined;
}

/**
 * Node's built-in modules imported by an ES module get an ES facade that reads every export,
 * which loads the lazy parts of each (fs's watchers and streams, util's parseArgs, ...). A chunk
 * takes them with require() instead: the same objects, without the facade. Those below, used by
 * few runs only (temporary report files, gzip input, the html report, duplicate digests), are
 * loaded on first call: each export taken from them must be a plain function.
 */
const LOAD_ON_CALL = new Set(['node:crypto', 'node:zlib']);
const require = createRequire(import.meta.url);

function requireBuiltins(code, fileName) {
  if (/\b__sw(Require|CreateRequire)\b/.test(code)) throw new Error(`bundle: ${fileName} already uses the names requireBuiltins adds`);
  let found = false;
  const out = code.replace(/^import\s*\{([^}]*)\}\s*from\s*"([^"]+)";?$/gm, (whole, names, spec) => {
    if (!isBuiltin(spec)) return whole;
    found = true;
    const pairs = names.split(',').map((n) => n.trim()).filter((n) => n !== '').map((n) => {
      const m = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(n);
      if (m === null) throw new Error(`bundle: ${fileName}: cannot read the import "${n}" from ${spec}`);
      return [m[1], m[2] ?? m[1]];
    });
    if (!LOAD_ON_CALL.has(spec)) return `const { ${pairs.map(([from, to]) => (from === to ? from : `${from}: ${to}`)).join(', ')} } = __swRequire(${JSON.stringify(spec)});`;
    return pairs
      .map(([from, to]) => {
        const value = require(spec)[from];
        if (typeof value !== 'function' || /^class\b/.test(Function.prototype.toString.call(value))) throw new Error(`bundle: ${fileName}: ${spec}'s ${from} is no plain function to load on call`);
        return `const ${to} = (...args) => __swRequire(${JSON.stringify(spec)}).${from}(...args);`;
      })
      .join('\n');
  });
  // What is left are imports this does not read (namespace or default imports of built-ins): none expected.
  for (const m of out.matchAll(/^import\b[^;]*?from\s*"([^"]+)"/gm)) if (isBuiltin(m[1])) throw new Error(`bundle: ${fileName}: an import of ${m[1]} was left as an import`);
  if (!found) return null;
  return `import { createRequire as __swCreateRequire } from "node:module";\nconst __swRequire = __swCreateRequire(import.meta.url);\n${out}`;
}

/** yargs' platform shim: the module the bundle's patches (and the help bundle's imports) are relative to. */
const YARGS_SHIM = join('yargs', 'lib', 'platform-shims', 'esm.mjs');

export async function bundleCli(root) {
  // Module ids are real paths (node_modules may be a link).
  root = realpathSync(root);
  const patched = new Set();
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const out = join(root, BUNDLE_DIR);
  rmSync(out, { recursive: true, force: true });
  const outputs = [];

  // yargs lays out help with cliui and string-width, whose regular expressions of Unicode
  // properties (\p{RGI_Emoji} above all: some 40 ms) V8 checks as it compiles them, and whose
  // Intl.Segmenter loads ICU's break iterators. Only help and usage text need them: they are a
  // CommonJS bundle of their own (help.cjs), which the shim require()s when yargs first asks.
  const shimFile = realpathSync(join(root, 'node_modules', YARGS_SHIM));
  const help = await rolldown({
    input: '\0stalewrite-help',
    cwd: root,
    platform: 'node',
    logLevel: 'warn',
    plugins: [
      {
        name: 'stalewrite-help',
        resolveId: (id) => (id === '\0stalewrite-help' ? id : undefined),
        async load(id) {
          if (id !== '\0stalewrite-help') return undefined;
          // Resolved from yargs' shim, as its own imports are: the same copies of the packages.
          const [cliui, stringWidth] = await Promise.all(['cliui', 'string-width'].map((name) => this.resolve(name, shimFile)));
          return `export { default as cliui } from ${JSON.stringify(cliui.id)};\nexport { default as stringWidth } from ${JSON.stringify(stringWidth.id)};\n`;
        },
      },
    ],
  });
  outputs.push(...(await help.write({ file: join(out, 'help.cjs'), format: 'cjs', codeSplitting: false, comments: { legal: true, annotation: false, jsdoc: false }, charset: 'ascii' })).output);
  await help.close();

  const bundle = await rolldown({
    input: { stalewrite: join(root, 'dist', 'cli', 'main.js') },
    cwd: root,
    platform: 'node',
    logLevel: 'warn',
    // The entry chunk may export more than main's exports, so that shared code joins it instead of a chunk of its own.
    preserveEntrySignatures: 'allow-extension',
    plugins: [
      {
        name: 'stalewrite-cli',
        transform(code, id) {
          // dist/version.js reads ../package.json beside itself: the bundle, one level deeper, is given the version it was built from.
          if (id === join(root, 'dist', 'version.js')) {
            patched.add('version');
            return `export const VERSION = ${JSON.stringify(version)};\n`;
          }
          // The generated validators require() ajv's runtime helpers through createRequire: a plain require() is bundled.
          if (id.startsWith(join(root, 'dist', 'generated') + sep) && code.includes('createRequire')) {
            patched.add(relative(root, id));
            return patch(code, id, [
              ["import { createRequire } from 'node:module';\n", ''],
              ['const require = createRequire(import.meta.url);\n', ''],
            ]);
          }
          if (id === shimFile) {
            patched.add('yargs shim');
            return patch(code, id, [
              // cliui and string-width: from help.cjs (above), on first use. (`require` is the shim's own, from createRequire: relative to the bundle.)
              ["import cliui from 'cliui'\n", ''],
              ["import stringWidth from 'string-width';\n", ''],
              ['const require = createRequire(import.meta.url);\n', "const require = createRequire(import.meta.url);\nlet helpModule;\nconst help = () => (helpModule ??= require('./help.cjs'));\n"],
              ['  cliui,\n', '  cliui: (opts) => help().cliui(opts),\n'],
              ['  stringWidth,\n', '  stringWidth: (text) => help().stringWidth(text),\n'],
              // yargs guesses a version from the package.json nearest to where it is installed (ours
              // is given after): in our package (its directory, as when yargs is installed under it),
              // not the bundle's path, which has no node_modules, and would have it read the working directory.
              ["const mainFilename = __dirname.substring(0, __dirname.lastIndexOf('node_modules'));", "const mainFilename = fileURLToPath(new URL('../../', import.meta.url));"],
              // Its locale files are found relative to its own file: in the bundle, they are copied beside it (below).
              ["directory: resolve(__dirname, '../../../locales')", "directory: fileURLToPath(new URL('./locales', import.meta.url))"],
              // Its assertions load node:assert (some 3 ms) only to fail: they pass without it, and load it to fail as before.
              ["import { notStrictEqual, strictEqual } from 'assert'\n", ''],
              [
                '    notStrictEqual,\n    strictEqual\n',
                "    notStrictEqual: (actual, expected, message) => { if (Object.is(actual, expected)) require('assert').notStrictEqual(actual, expected, message) },\n    strictEqual: (actual, expected, message) => { if (!Object.is(actual, expected)) require('assert').strictEqual(actual, expected, message) }\n",
              ],
            ]);
          }
          return undefined;
        },
        renderChunk(code, chunk) {
          return requireBuiltins(code, chunk.fileName);
        },
      },
    ],
  });
  outputs.push(
    ...(
      await bundle.write({
        dir: out,
        format: 'esm',
        entryFileNames: '[name].js',
        chunkFileNames: '[name]-[hash].js',
        comments: { legal: true, annotation: false, jsdoc: false },
        // Non-ASCII characters escaped: the source is then a one-byte string, decoded and scanned faster.
        charset: 'ascii',
      })
    ).output,
  );
  await bundle.close();
  const expected = ['version', 'yargs shim', join('dist', 'generated', 'event-validator.js'), join('dist', 'generated', 'mapping-validator.js')];
  for (const what of expected) if (!patched.has(what)) throw new Error(`bundle: ${what} was not patched (not bundled, or at another path)`);
  // Nothing of help.cjs may be in the other chunks too (two copies, and compiled at start-up).
  const helpChunk = outputs.find((c) => c.fileName === 'help.cjs');
  for (const chunk of outputs) {
    if (chunk.type !== 'chunk' || chunk === helpChunk) continue;
    const both = Object.keys(chunk.modules).filter((id) => id in helpChunk.modules && !id.startsWith('\0'));
    if (both.length > 0) throw new Error(`bundle: ${chunk.fileName} holds modules of help.cjs: ${both.map((id) => relative(root, id)).join(', ')}`);
  }
  // yargs' locales (its help and messages in LANG's language), where the patched shim looks for them.
  const yargsDir = packageOf(shimFile).dir;
  mkdirSync(join(out, 'locales'));
  for (const f of readdirSync(join(yargsDir, 'locales'))) copyFileSync(join(yargsDir, 'locales', f), join(out, 'locales', f));
  // The licenses of the packages whose code is in the bundle, as their licenses ask.
  const packages = new Map();
  for (const chunk of outputs) {
    if (chunk.type !== 'chunk') continue;
    for (const id of Object.keys(chunk.modules)) {
      const p = id.includes(`${sep}node_modules${sep}`) ? packageOf(id) : undefined;
      if (p !== undefined) packages.set(`${p.name}@${p.version}`, p);
    }
  }
  const notices = [...packages.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, p]) => {
    const file = readdirSync(p.dir).find((f) => /^(licen[cs]e|copying)([.-]|$)/i.test(f));
    if (file === undefined) throw new Error(`bundle: ${key} (${relative(root, p.dir)}) has no license file to include`);
    return `## ${key} (${p.license})\n\n${readFileSync(join(p.dir, file), 'utf8').trim()}\n`;
  });
  writeFileSync(join(out, 'THIRD-PARTY-LICENSES.md'), `# Third-party code in dist/bundle\n\nThe CLI bundle (stalewrite.js, its chunks and help.cjs) holds code of these packages, under these licenses.\n\n${notices.join('\n')}`);
  return outputs;
}
