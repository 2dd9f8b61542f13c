/**
 * Helm's own engine (scripts/helm-engine.mjs: helm-java from Maven Central) for the chart tests: one JVM lints and
 * renders every case. No helm binary can be installed from the registries these machines reach; this is the same Go
 * code `helm template` and `helm lint` run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';

const ROOT = path.resolve(__dirname, '../../../..');
const SCRIPT = path.join(ROOT, 'scripts', 'helm-engine.mjs');

/** Why the engine cannot run here (no java or mvn), or undefined when it can. */
export function helmEngineMissing(): string | undefined {
  const r = spawnSync(process.execPath, [SCRIPT, 'check'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : r.stderr.trim() || `exit ${r.status}`;
}

export interface HelmCase {
  name: string;
  /** Values files, in the order of `-f`. */
  values: string[];
  /** Also `helm lint --strict` it (about twice a render's time). */
  lint?: boolean;
}

export interface HelmResult {
  /** The manifest `helm template` printed, hooks included, or undefined when Helm refused. */
  manifest?: string;
  /** Helm's refusal (a `fail`, a values.schema.json violation, invalid YAML out of a template). */
  error?: string;
  /** `helm lint --strict` of the chart with this case's values, when asked. */
  lint?: { failed: boolean; messages: string[] };
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Helm's coalescing of values files: maps merge key by key, anything else (lists included) is replaced. */
function coalesce(base: unknown, over: unknown): unknown {
  if (!isMap(base) || !isMap(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = v === null ? undefined : coalesce(base[k], v);
  return out;
}

/**
 * helm-java's lint takes no values files, so each case is linted on a copy of the chart whose values.yaml is the
 * coalesced values, read as Helm reads them (YAML 1.1).
 */
function chartWithValues(chart: string, values: string[], dir: string): string {
  const copy = path.join(dir, path.basename(chart));
  fs.cpSync(chart, copy, { recursive: true });
  const read = (file: string) => YAML.parse(fs.readFileSync(file, 'utf8'), { version: '1.1' });
  const merged = values.reduce((acc, file) => coalesce(acc, read(file)), read(path.join(chart, 'values.yaml')));
  // Written as YAML 1.1 too, so a string such as "off" stays quoted for Helm.
  fs.writeFileSync(path.join(copy, 'values.yaml'), YAML.stringify(merged, { version: '1.1' }));
  return copy;
}

/**
 * helm-java's template prints the release manifest, which leaves hooks out (the migrate Job, the helm test Pod). A
 * copy of the chart whose templates name the hook annotation differently renders them as plain objects, so they are
 * checked like the rest; the annotation is put back in the output.
 */
function chartWithHooksInline(chart: string, dir: string): string {
  const copy = path.join(dir, path.basename(chart));
  fs.cpSync(chart, copy, { recursive: true });
  const templates = path.join(copy, 'templates');
  const walk = (d: string): string[] =>
    fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  for (const file of walk(templates)) fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replaceAll('helm.sh/hook', HOOK_STANDIN));
  return copy;
}
const HOOK_STANDIN = 'helm-hook-rendered-inline.test/hook';

export function renderCases(
  chart: string,
  cases: HelmCase[],
  opts: { release: string; namespace: string; kubeVersion: string },
): Record<string, HelmResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'helm-cases-'));
  try {
    const out = path.join(dir, 'out');
    const inline = chartWithHooksInline(chart, fs.mkdtempSync(path.join(dir, 'hooks-')));
    const requests = cases.flatMap((c) => [
      ['template', c.name, inline, opts.release, opts.namespace, opts.kubeVersion, ...c.values].join('\t'),
      ...(c.lint ? [['lint', c.name, chartWithValues(chart, c.values, fs.mkdtempSync(path.join(dir, 'lint-')))].join('\t')] : []),
    ]);
    execFileSync(process.execPath, [SCRIPT, 'run', out], { input: `${requests.join('\n')}\n`, stdio: ['pipe', 'inherit', 'pipe'] });
    const read = (file: string) => (fs.existsSync(path.join(out, file)) ? fs.readFileSync(path.join(out, file), 'utf8') : undefined);
    return Object.fromEntries(
      cases.map((c) => {
        const [verdict, ...messages] = (read(`${c.name}.lint`) ?? 'failed\nno lint answer').trimEnd().split('\n');
        const lint = c.lint ? { failed: verdict !== 'ok', messages } : undefined;
        const manifest = read(`${c.name}.yaml`)?.replaceAll(HOOK_STANDIN, 'helm.sh/hook');
        return [c.name, { manifest, error: read(`${c.name}.error`), lint }];
      }),
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
