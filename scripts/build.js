/**
 * `pnpm build`: every runnable entry point bundled by esbuild into dist/<name>.cjs (with a linked source map), so the
 * gateway's processes run plain JavaScript: no tsx loader, no esbuild service and no TypeScript compile at start
 * (about 50-60 MiB of each process's RSS; docs/benchmarks.md, "Compiled entry points").
 *
 *   node scripts/build.js              build now
 *   node scripts/build.js --if-stale   build only when a bundled source, the lockfile or this script changed since
 *                                      the last build (what `pnpm start` and `pnpm fleet` run first: a few ms)
 *
 * Plain CommonJS on purpose: it runs before anything is compiled, and the staleness check must not load a loader.
 *
 * What stays out of the bundles, required from where pnpm installed it: every third-party package. Their files read
 * at run time (PGlite's WebAssembly, js-tiktoken's ranks), their workers (pino's transports) and the modules
 * OpenTelemetry patches when they are required (express, pg, ioredis) keep working as under tsx. The bundle
 * requires each by its resolved path relative to dist/, since dist/ sees none of the workspace packages'
 * node_modules. The workspace's own files that are read at run time (SQL migrations, the PGlite and tokenizer
 * workers) are read from their source folders: each `__dirname` in a bundled source file is that file's folder.
 */

const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');

const ROOT = path.resolve(__dirname, '..');
const OUT_DIR = path.join(ROOT, 'dist');

/**
 * Bundle name -> source entry, relative to the repository root. The fleet's processes are named as the service
 * table names them (libs/topology/src/commands.ts runs dist/<name>.cjs); OpenTelemetry names a bundle's traces by it.
 */
const ENTRIES = {
  gateway: 'services/gateway/src/main.ts',
  migrate: 'services/gateway/src/migrate.ts',
  edge: 'services/edge/src/main.ts',
  billing: 'services/billing/src/main.ts',
  text: 'services/text/src/main.ts',
  media: 'services/media/src/main.ts',
  jobs: 'services/jobs/src/main.ts',
  catalogue: 'services/catalogue/src/main.ts',
  mcp: 'services/mcp/src/main.ts',
  fleet: 'deploy/local-fleet.ts',
  'kafka-topics': 'deploy/kafka/topics.ts',
};

/** Files outside the bundles' inputs that change what a build produces. */
const ALSO_STAMPED = ['scripts/build.js', 'pnpm-lock.yaml', 'tsconfig.json'];

const BUILTINS = new Set(builtinModules);
const isBuiltin = (p) => p.startsWith('node:') || BUILTINS.has(p) || BUILTINS.has(p.split('/')[0]);
/** The workspace's own packages, bundled from their TypeScript sources. */
const isWorkspace = (p) => p.startsWith('@gateway/') || p === 'model-gateway' || p.startsWith('model-gateway/');

/** A file's size and mtime: what changes when it is edited, checked out or replaced. */
const fingerprint = (root, file) => {
  try {
    const s = fs.statSync(path.join(root, file));
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
};

/** Why the bundles in dist/ no longer match the sources (the first reason found), or undefined when they do. */
function staleReason(root = ROOT) {
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(path.join(root, 'dist', 'build-stamp.json'), 'utf8'));
  } catch {
    return 'no build yet';
  }
  for (const name of Object.keys(ENTRIES)) {
    if (stamp.entries?.[name] !== ENTRIES[name]) return `entry ${name} is new or moved`;
    if (!fs.existsSync(path.join(root, 'dist', `${name}.cjs`))) return `dist/${name}.cjs is missing`;
  }
  for (const [file, print] of Object.entries(stamp.inputs ?? {})) if (fingerprint(root, file) !== print) return `${file} changed`;
  return undefined;
}

/** Records what a build of `root` was made from (paths relative to it), for staleReason. Written last, atomically. */
function writeStamp(root, inputs) {
  const stamp = { entries: ENTRIES, inputs: Object.fromEntries([...inputs].sort().map((f) => [f, fingerprint(root, f)])) };
  const file = path.join(root, 'dist', 'build-stamp.json');
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(stamp, null, 1)}\n`);
  fs.renameSync(tmp, file);
}

/**
 * Per bundled workspace file: `__dirname` becomes that file's own folder (its SQL, its worker), `require.resolve`
 * resolves from there, and a `require.main === module` guard holds only in the bundle made from that file (in a
 * bundle every module shares the entry's `module`, so deploy/kafka/topics.ts's CLI would run inside `pnpm fleet`).
 * One build makes every bundle and loads each file once, so the guard names its bundle's file.
 */
function sourceFolders(bundleOfEntry) {
  return {
    name: 'source-folders',
    setup(build) {
      // This script stays itself: `pnpm fleet` requires it to check dist/, and its own text would not survive the edits below.
      build.onResolve({ filter: /[\\/]build(\.js)?$/ }, (args) => {
        const file = path.resolve(args.resolveDir, args.path);
        if (file !== __filename && `${file}.js` !== __filename) return undefined;
        return { path: path.relative(OUT_DIR, __filename).split(path.sep).join('/'), external: true };
      });
      build.onLoad({ filter: /\.(ts|js)$/ }, async (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        let text = await fs.promises.readFile(args.path, 'utf8');
        const dir = JSON.stringify(path.relative(OUT_DIR, path.dirname(args.path)).split(path.sep).join('/'));
        const here = `require("node:path").join(__dirname, ${dir})`;
        const bundle = bundleOfEntry.get(args.path);
        const main = bundle ? `(require.main === module && require("node:path").basename(require.main.filename) === "${bundle}.cjs")` : 'false';
        text = text.replace(/require\.main\s*===\s*module/g, main);
        // __dirname first: the require.resolve replacement brings its own, which must stay the bundle's.
        text = text
          .replace(/\b__dirname\b/g, here)
          .replace(/require\.resolve\(/g, `require("node:module").createRequire(require("node:path").join(${here}, "_.js")).resolve(`);
        return { contents: text, loader: args.path.endsWith('.ts') ? 'ts' : 'js', resolveDir: path.dirname(args.path) };
      });
    },
  };
}

/** Third-party packages stay where pnpm installed them: required by their path relative to dist/ (see the header). */
function packagesInPlace() {
  return {
    name: 'packages-in-place',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData?.inPlace || isBuiltin(args.path) || isWorkspace(args.path)) return undefined;
        // A CommonJS bundle requires what TypeScript imports: resolve as require() does, so a dual package
        // gives its CommonJS build. import() keeps the import conditions (ESM-only packages load that way).
        const kind = args.kind === 'dynamic-import' ? 'dynamic-import' : 'require-call';
        const r = await build.resolve(args.path, { kind, resolveDir: args.resolveDir, pluginData: { inPlace: true } });
        if (r.errors.length) return { errors: r.errors };
        const rel = path.relative(OUT_DIR, r.path).split(path.sep).join('/');
        return { path: rel.startsWith('.') ? rel : `./${rel}`, external: true };
      });
    },
  };
}

/** Builds every bundle; each file is written to a temporary name and renamed, so concurrent builds never mix. */
async function build() {
  const esbuild = require('esbuild');
  const entryPoints = Object.fromEntries(Object.entries(ENTRIES).map(([name, src]) => [name, path.join(ROOT, src)]));
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints,
    outdir: OUT_DIR,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: 'warning',
    logOverride: { 'commonjs-variable-in-esm': 'silent' },
    plugins: [packagesInPlace(), sourceFolders(new Map(Object.entries(entryPoints).map(([name, file]) => [file, name])))],
  });
  fs.mkdirSync(OUT_DIR, { recursive: true });
  for (const file of result.outputFiles) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, file.contents);
    fs.renameSync(tmp, file.path);
  }
  const inputs = [...Object.keys(result.metafile.inputs).filter((f) => !f.includes('node_modules/')), ...ALSO_STAMPED];
  writeStamp(ROOT, inputs);
  return { outputs: result.outputFiles.map((f) => path.relative(ROOT, f.path)), inputs: inputs.length };
}

/** Builds when stale; answers why it built, or undefined when dist/ was current. `root` and `rebuild` are for tests. */
async function buildIfStale(root = ROOT, rebuild = build) {
  const reason = staleReason(root);
  if (reason === undefined) return undefined;
  await rebuild();
  return reason;
}

module.exports = { ENTRIES, OUT_DIR, build, buildIfStale, staleReason, writeStamp };

if (require.main === module) {
  const ifStale = process.argv.includes('--if-stale');
  const t0 = performance.now();
  (ifStale ? buildIfStale() : build().then(() => 'asked')).then(
    (why) => {
      if (why !== undefined) process.stderr.write(`build: dist/ rebuilt (${why}) in ${Math.round(performance.now() - t0)} ms\n`);
    },
    (e) => {
      process.stderr.write(`build: ${e.stack ?? e}\n`);
      process.exit(1);
    },
  );
}
