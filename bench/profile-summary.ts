/**
 * Summarises V8 CPU profiles (.cpuprofile, as `node --cpu-prof` writes them): per thread, the top functions by self
 * time (nodes aggregated by function name + file:line, as a percentage of the thread's samples) and self time grouped
 * by area (node internals, express, undici, pglite, pino, each of our services and libs by folder, ...).
 *
 *   npx tsx bench/profile-summary.ts <file.cpuprofile | directory> [--top 25] [--from <µs> --to <µs>] [--maps <dir>]
 *
 * A directory summarises every .cpuprofile in it (one per thread: main, each worker). --from/--to keep only the
 * samples inside a CLOCK_MONOTONIC window in microseconds (the clock .cpuprofile timestamps use; `pnpm bench
 * --profile` passes the measured run's window so start-up and warm-up are left out). Positions in .ts files are
 * mapped back to .ts lines through the source maps tsx keeps in its cache (TMPDIR/tsx-<uid>/): by default the
 * `tmp/tsx-*` directory next to the profiles (`pnpm bench --profile` gives the gateway its own), else --maps, else the
 * shared cache (which may hold an older compile of a file that changed since: such lines are marked `~`).
 */
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import os from 'node:os';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SummaryOptions {
  top?: number;
  fromUs?: number;
  toUs?: number;
  /** tsx cache directories to map .ts positions through. */
  maps?: string[];
}

const ROOT = path.resolve(__dirname, '..');

/** V8's pseudo-frames: not code. */
const IDLE = '(idle)';
const PSEUDO: Record<string, string> = {
  '(garbage collector)': 'V8: garbage collector',
  '(program)': 'V8: (program), native code outside JS',
  '(root)': 'V8: (program), native code outside JS',
};

/** Node's write bindings (sockets; `writeBuffer` also files): their self time is mostly the write system call. */
const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String']);

/** Packages grouped under one name: a web framework's own dependencies count as the framework. */
const PACKAGE_AREAS: Record<string, string> = {
  express: 'express (+ router, body-parser & co.)',
  router: 'express (+ router, body-parser & co.)',
  'body-parser': 'express (+ router, body-parser & co.)',
  'raw-body': 'express (+ router, body-parser & co.)',
  finalhandler: 'express (+ router, body-parser & co.)',
  'path-to-regexp': 'express (+ router, body-parser & co.)',
  'on-finished': 'express (+ router, body-parser & co.)',
  'type-is': 'express (+ router, body-parser & co.)',
  'content-type': 'express (+ router, body-parser & co.)',
  'iconv-lite': 'express (+ router, body-parser & co.)',
  'proxy-addr': 'express (+ router, body-parser & co.)',
  'http-errors': 'express (+ router, body-parser & co.)',
  'media-typer': 'express (+ router, body-parser & co.)',
  'mime-types': 'express (+ router, body-parser & co.)',
  accepts: 'express (+ router, body-parser & co.)',
  negotiator: 'express (+ router, body-parser & co.)',
  parseurl: 'express (+ router, body-parser & co.)',
  'safe-buffer': 'express (+ router, body-parser & co.)',
  qs: 'express (+ router, body-parser & co.)',
  send: 'express (+ router, body-parser & co.)',
  etag: 'express (+ router, body-parser & co.)',
  fresh: 'express (+ router, body-parser & co.)',
  vary: 'express (+ router, body-parser & co.)',
  depd: 'express (+ router, body-parser & co.)',
  statuses: 'express (+ router, body-parser & co.)',
  debug: 'express (+ router, body-parser & co.)',
  ms: 'express (+ router, body-parser & co.)',
  '@electric-sql/pglite': 'pglite (JS side)',
  pino: 'pino',
  'pino-std-serializers': 'pino',
  'sonic-boom': 'pino',
  'thread-stream': 'pino',
  'fast-redact': 'pino',
  'quick-format-unescaped': 'pino',
  'on-exit-leak-free': 'pino',
  'atomic-sleep': 'pino',
  'fast-safe-stringify': 'pino',
  tsx: 'tsx loader',
  esbuild: 'tsx loader',
  'get-tsconfig': 'tsx loader',
};

function packageOf(url: string): string {
  const rest = url.slice(url.lastIndexOf('/node_modules/') + '/node_modules/'.length);
  const parts = rest.split('/');
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

const PGLITE_WASM_AREA = 'pglite (WebAssembly: Postgres itself)';
const LLHTTP_AREA = 'undici (llhttp, its HTTP parser: WebAssembly)';

/** The area a frame's code belongs to (a WebAssembly frame's is its caller's: see summarizeProfile). */
export function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === IDLE) return 'idle';
    if (SOCKET_WRITES.has(functionName)) return 'node bindings: socket and file writes (the syscalls)';
    if (functionName === 'postMessage') return 'node bindings: postMessage to worker threads';
    return PSEUDO[functionName] ?? 'V8 builtins and other node bindings (no script)';
  }
  if (url.startsWith('wasm://')) return PGLITE_WASM_AREA;
  if (url.startsWith('node:')) {
    const p = url.slice(5);
    if (p.startsWith('internal/deps/undici')) return "undici (node's built-in fetch)";
    if (p.startsWith('internal/deps/')) return `node internals: ${p.split('/')[2]}`;
    if (/^(_http_|http$|https$|internal\/http)/.test(p)) return 'node internals: http';
    if (/^(net$|stream|_stream|internal\/streams|internal\/stream_base|internal\/net|internal\/webstreams)/.test(p))
      return 'node internals: net and streams';
    if (/^(internal\/worker|worker_threads|internal\/per_context\/messageport)/.test(p)) return 'node internals: worker threads';
    if (/^(internal\/process\/task_queues|internal\/timers|timers|internal\/async_hooks|async_hooks|events$|internal\/event_target)/.test(p))
      return 'node internals: event loop, timers, promises, events';
    if (/^(internal\/modules|internal\/vm|vm$)/.test(p)) return 'node internals: module loading';
    return 'node internals: other';
  }
  if (url.includes('/node_modules/')) {
    const pkg = packageOf(url);
    if (pkg.startsWith('@opentelemetry/')) return 'opentelemetry';
    return PACKAGE_AREAS[pkg] ?? pkg;
  }
  const rel = repoPath(url);
  const m = /^(services|libs)\/([^/]+)\/src\/(.*)$/.exec(rel);
  if (m) {
    const dirs = m[3].split('/');
    return dirs.length > 1 ? `${m[1]}/${m[2]}/${dirs[0]}` : `${m[1]}/${m[2]}`;
  }
  return rel.startsWith('/') ? rel : rel.split('/').slice(0, 2).join('/');
}

/** An area's family: pglite's JS and its WebAssembly are one, so are express and its dependencies. */
const family = (area: string) => area.split(' ')[0];

/**
 * A script's path inside the repository it ran from (the profile may come from another checkout or an exported
 * tree): from its services/ or libs/ folder on, else relative to this checkout, else absolute.
 */
function repoPath(url: string): string {
  const file = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  const m = /\/((?:services|libs)\/[^/]+\/src\/.*)$/.exec(file);
  if (m) return m[1];
  const rel = path.relative(ROOT, file);
  return rel.startsWith('..') ? file : rel;
}

interface CacheEntry {
  file: string;
  mtimeMs: number;
  map?: SourceMap;
}

/** tsx's compile cache: each entry is JSON {code, map} with the source's path in map.sources[0]. */
export class TsxSourceMaps {
  private bySource = new Map<string, CacheEntry>();

  constructor(
    dirs: string[],
    /** True when the cache is shared with other runs, so an entry may be an older compile of the file. */
    readonly shared: boolean,
  ) {
    for (const dir of dirs) {
      let names: string[] = [];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        const file = path.join(dir, name);
        try {
          const st = fs.statSync(file);
          if (!st.isFile()) continue;
          const text = fs.readFileSync(file, 'utf8');
          const i = text.lastIndexOf('"sources":[');
          if (i < 0) continue;
          const source = JSON.parse(text.slice(i + 10, text.indexOf(']', i) + 1))[0] as string;
          const prev = this.bySource.get(source);
          if (!prev || prev.mtimeMs < st.mtimeMs) this.bySource.set(source, { file, mtimeMs: st.mtimeMs });
        } catch {
          /* not a cache entry */
        }
      }
    }
  }

  get size(): number {
    return this.bySource.size;
  }

  /** The 1-based .ts line of a 0-based position in tsx's compiled code, or undefined. */
  originalLine(sourceFile: string, line: number, column: number): number | undefined {
    const entry = this.bySource.get(sourceFile);
    if (!entry) return undefined;
    try {
      entry.map ??= new SourceMap(JSON.parse(fs.readFileSync(entry.file, 'utf8')).map);
      const found = entry.map.findEntry(line, column) as { originalLine?: number };
      return found.originalLine === undefined ? undefined : found.originalLine + 1;
    } catch {
      return undefined;
    }
  }
}

/** The tsx cache directories for profiles in `dir`: its own (`tmp/tsx-*`), else the shared one under the OS temp dir. */
export function findTsxCaches(dir: string): { dirs: string[]; shared: boolean } {
  const own = path.join(dir, 'tmp');
  const list = (d: string) => {
    try {
      return fs
        .readdirSync(d)
        .filter((n) => n.startsWith('tsx-'))
        .map((n) => path.join(d, n));
    } catch {
      return [];
    }
  };
  const mine = list(own);
  return mine.length ? { dirs: mine, shared: false } : { dirs: list(os.tmpdir()), shared: true };
}

function location(frame: CallFrame, maps: TsxSourceMaps | undefined): string {
  const { url, lineNumber, columnNumber } = frame;
  if (!url) return '';
  if (url.startsWith('node:')) return `${url}:${lineNumber + 1}`;
  if (url.startsWith('wasm://')) return 'wasm';
  const file = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) return `${file.slice(nm + '/node_modules/'.length)}:${lineNumber + 1}`;
  const shown = repoPath(url);
  if (/\.[cm]?ts$/.test(file)) {
    const line = maps?.originalLine(file, lineNumber, columnNumber);
    if (line === undefined) return `${shown}:? (compiled line ${lineNumber + 1})`;
    return `${shown}:${maps?.shared ? '~' : ''}${line}`;
  }
  return `${shown}:${lineNumber + 1}`;
}

export interface FunctionCost {
  name: string;
  location: string;
  area: string;
  samples: number;
  ms: number;
  /** Its samples by the nearest caller outside node's internals and outside its own area (who made it run). */
  via: Map<string, number>;
}

export interface ThreadSummary {
  file: string;
  /** Thread id from node's file name (CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile); 0 is the main thread. */
  tid: number | undefined;
  samples: number;
  idleSamples: number;
  windowMs: number;
  busyMs: number;
  functions: FunctionCost[];
  areas: { area: string; samples: number; ms: number }[];
}

export function summarizeProfile(file: string, profile: CpuProfile, opts: SummaryOptions, maps?: TsxSourceMaps): ThreadSummary {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const from = opts.fromUs ?? -Infinity;
  const to = opts.toUs ?? Infinity;
  // Sample i is taken at startTime + Σ timeDeltas[0..i] and stands for the time until the next sample (DevTools' rule).
  const bySelf = new Map<number, { samples: number; us: number }>();
  let t = profile.startTime;
  let samples = 0;
  let firstUs = Infinity;
  let lastUs = -Infinity;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < from || t > to) continue;
    const next = i + 1 < profile.samples.length ? (profile.timeDeltas[i + 1] ?? 0) : 0;
    const e = bySelf.get(profile.samples[i]) ?? { samples: 0, us: 0 };
    e.samples++;
    e.us += Math.max(0, next);
    bySelf.set(profile.samples[i], e);
    samples++;
    firstUs = Math.min(firstUs, t);
    lastUs = Math.max(lastUs, t);
  }
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // The nearest ancestor that is script code (not node's internals, not a native frame) of another area than the
  // frame's own: for \`writev\`, whether undici (the upstream call) or express (the answer) wrote; for express's
  // \`handle\`, which of our handlers it ran.
  const viaCache = new Map<number, string>();
  const viaOf = (id: number, ownArea: string): string => {
    const cached = viaCache.get(id);
    if (cached !== undefined) return cached;
    let via = '';
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const f = nodes.get(p)!.callFrame;
      if (!f.url || f.url.startsWith('node:')) continue;
      if (family(areaOf(f)) === family(ownArea)) continue;
      via = `\`${f.functionName || '(anonymous)'}\` ${location(f, maps)}`;
      break;
    }
    viaCache.set(id, via);
    return via;
  };
  // A WebAssembly frame's url names no module; the script that called into it does: undici's HTTP parser (llhttp),
  // in every process, or PGlite, where one runs. Until 2026-11-29 every such frame read as PGlite.
  const wasmAreaOf = (id: number): string => {
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const f = nodes.get(p)!.callFrame;
      if (!f.url || f.url.startsWith('wasm://')) continue;
      return family(areaOf(f)) === 'undici' ? LLHTTP_AREA : PGLITE_WASM_AREA;
    }
    return PGLITE_WASM_AREA;
  };
  const fns = new Map<string, FunctionCost>();
  const areas = new Map<string, { area: string; samples: number; ms: number }>();
  let idleSamples = 0;
  let idleUs = 0;
  let allUs = 0;
  for (const [id, cost] of bySelf) {
    const frame = nodes.get(id)!.callFrame;
    allUs += cost.us;
    const area = frame.url.startsWith('wasm://') ? wasmAreaOf(id) : areaOf(frame);
    if (area === 'idle') {
      idleSamples += cost.samples;
      idleUs += cost.us;
    }
    const name = frame.functionName || '(anonymous)';
    const loc = location(frame, maps);
    const key = `${name}\u0000${loc}`;
    const f = fns.get(key) ?? { name, location: loc, area, samples: 0, ms: 0, via: new Map<string, number>() };
    f.samples += cost.samples;
    f.ms += cost.us / 1000;
    if (area !== 'idle') {
      const via = viaOf(id, area);
      if (via) f.via.set(via, (f.via.get(via) ?? 0) + cost.samples);
    }
    fns.set(key, f);
    const a = areas.get(area) ?? { area, samples: 0, ms: 0 };
    a.samples += cost.samples;
    a.ms += cost.us / 1000;
    areas.set(area, a);
  }
  const m = /\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(path.basename(file));
  return {
    file,
    tid: m ? Number(m[2]) : undefined,
    samples,
    idleSamples,
    windowMs: samples ? (lastUs - firstUs) / 1000 : 0,
    busyMs: (allUs - idleUs) / 1000,
    functions: [...fns.values()].sort((a, b) => b.ms - a.ms),
    areas: [...areas.values()].sort((a, b) => b.ms - a.ms),
  };
}

const p1 = (part: number, whole: number) => (whole ? ((100 * part) / whole).toFixed(1) : '–');

/** One thread as markdown: the top functions by self time, then every area. */
export function formatThread(s: ThreadSummary, title: string, top: number): string {
  const busy = s.samples - s.idleSamples;
  const out = [
    `### ${title}`,
    '',
    `${s.samples} samples over ${(s.windowMs / 1000).toFixed(1)} s; busy (not idle) ${busy} samples, ${Math.round(s.busyMs)} ms ` +
      `(${p1(s.busyMs, s.windowMs)} % of one core). Sorted by self ms: each sample stands for the time until the next ` +
      'one, as in DevTools. "% samples": of all the thread\'s samples in the window, idle included; "% busy": of its ' +
      'non-idle samples.',
    '',
    `| # | self ms | % samples | % busy | function | where | area | mostly via (share of its samples) |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  s.functions.slice(0, top).forEach((f, i) => {
    const isIdle = f.area === 'idle';
    out.push(
      `| ${i + 1} | ${Math.round(f.ms)} | ${p1(f.samples, s.samples)} | ${isIdle ? '' : p1(f.samples, busy)} | \`${f.name}\` | ${f.location} | ${f.area} | ` +
        `${[...f.via]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 2)
          .map(([v, n]) => `${v} (${Math.round((100 * n) / f.samples)} %)`)
          .join('; ')} |`,
    );
  });
  out.push('', '| area | self ms | % samples | % busy |', '|---|---|---|---|');
  for (const a of s.areas)
    out.push(`| ${a.area} | ${Math.round(a.ms)} | ${p1(a.samples, s.samples)} | ${a.area === 'idle' ? '' : p1(a.samples, busy)} |`);
  return out.join('\n');
}

/**
 * Every thread's profile in `files`: the main thread in full, then one line per other thread (workers: PGlite's, the
 * ESM loader's), then the busiest other thread in full.
 */
export function summarizeFiles(files: string[], opts: SummaryOptions = {}): string {
  const top = opts.top ?? 25;
  const dir = path.dirname(files[0]);
  const caches = opts.maps ? { dirs: opts.maps, shared: false } : findTsxCaches(dir);
  const maps = new TsxSourceMaps(caches.dirs, caches.shared);
  const threads = files
    .map((f) => summarizeProfile(f, JSON.parse(fs.readFileSync(f, 'utf8')) as CpuProfile, opts, maps))
    .filter((t) => t.samples > 0)
    .sort((a, b) => (a.tid === 0 ? -1 : b.tid === 0 ? 1 : b.busyMs - a.busyMs));
  if (!threads.length) return 'No samples in the window.';
  const label = (t: ThreadSummary) => {
    const mainArea = t.areas.find((a) => a.area !== 'idle' && !a.area.startsWith('V8') && !a.area.startsWith('node internals'))?.area;
    return `${t.tid === 0 ? 'main thread' : `thread ${t.tid ?? '?'}`}${t.tid !== 0 && mainArea ? ` (mostly ${mainArea})` : ''}`;
  };
  const out: string[] = [];
  if (opts.fromUs !== undefined || opts.toUs !== undefined)
    out.push('Samples restricted to the measured window (start-up and warm-up left out).', '');
  if (caches.shared && maps.size)
    out.push("`~` before a .ts line: mapped through tsx's shared cache, which may hold an older compile of that file.", '');
  const [first, ...rest] = threads;
  out.push(formatThread(first, `${label(first)}: ${path.basename(first.file)}`, top));
  if (rest.length) {
    out.push('', '### Other threads', '', '| thread | busy ms | % of one core | top functions (self ms) |', '|---|---|---|---|');
    for (const t of rest)
      out.push(
        `| ${label(t)} | ${Math.round(t.busyMs)} | ${p1(t.busyMs, t.windowMs)} | ${t.functions
          .filter((f) => f.area !== 'idle')
          .slice(0, 3)
          .map((f) => `\`${f.name}\` ${Math.round(f.ms)}`)
          .join(', ')} |`,
      );
    const busiest = rest.reduce((a, b) => (b.busyMs > a.busyMs ? b : a));
    if (busiest.busyMs > 0.05 * first.busyMs)
      out.push('', formatThread(busiest, `${label(busiest)}: ${path.basename(busiest.file)}`, Math.min(top, 15)));
  }
  return out.join('\n');
}

function cli(argv: string[]): void {
  const opts: SummaryOptions = {};
  const inputs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--top') opts.top = Number(argv[++i]);
    else if (a === '--from') opts.fromUs = Number(argv[++i]);
    else if (a === '--to') opts.toUs = Number(argv[++i]);
    else if (a === '--maps') (opts.maps ??= []).push(argv[++i]);
    else inputs.push(a);
  }
  if (!inputs.length) {
    process.stderr.write('usage: npx tsx bench/profile-summary.ts <file.cpuprofile | dir> [--top 25] [--from µs --to µs] [--maps <tsx cache dir>]\n');
    process.exit(2);
  }
  const files = inputs.flatMap((p) =>
    fs.statSync(p).isDirectory()
      ? fs
          .readdirSync(p)
          .filter((n) => n.endsWith('.cpuprofile'))
          .map((n) => path.join(p, n))
      : [p],
  );
  if (!files.length) throw new Error(`no .cpuprofile in ${inputs.join(', ')}`);
  process.stdout.write(`${summarizeFiles(files, opts)}\n`);
}

if (require.main === module) cli(process.argv.slice(2));
