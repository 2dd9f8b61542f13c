import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { importGraph } from './graph';
import { boundaryFindings, cycleFindings, type Finding } from './rules';
import { readWorkspace } from './workspace';

/**
 * The boundary check on a small workspace written per test: the clean one passes, and each planted fault (a deep
 * import, a relative import out of a package, a service importing a service, an undeclared package, a cycle) is
 * found, the way scripts/check-imports.ts finds them in the tree.
 */
type Files = Record<string, string>;

const pkg = (name: string, deps: string[] = [], exportsMap: Record<string, string> | null = { '.': './src/index.ts' }) =>
  JSON.stringify({ name, ...(exportsMap ? { exports: exportsMap } : {}), dependencies: Object.fromEntries(deps.map((d) => [d, 'workspace:*'])) });

const CLEAN: Files = {
  'pnpm-workspace.yaml': 'packages:\n  - libs/*\n  - services/*\nonlyBuiltDependencies:\n  - esbuild\n',
  'package.json': JSON.stringify({ name: 'root' }),
  'libs/a/package.json': pkg('@fx/a', [], { '.': './src/index.ts', './testing': './src/testing/index.ts' }),
  'libs/a/src/index.ts': "export { inner } from './inner';\n",
  'libs/a/src/inner.ts': 'export const inner = 1;\n',
  'libs/a/src/testing/index.ts': "export const helper = 'h';\n",
  'libs/b/package.json': pkg('@fx/b', ['@fx/a']),
  'libs/b/src/index.ts': "import { inner } from '@fx/a';\nimport { helper } from '@fx/a/testing';\nexport const b = [inner, helper];\n",
  'services/one/package.json': pkg('@fx/one', ['@fx/b']),
  'services/one/src/index.ts': "import { b } from '@fx/b';\nexport const one = b;\n",
  'services/two/package.json': pkg('@fx/two', ['@fx/b']),
  'services/two/src/index.ts': "import { b } from '@fx/b';\nexport const two = b;\n",
  'services/gateway/package.json': pkg('@fx/gateway', ['@fx/one', '@fx/two']),
  'services/gateway/src/index.ts': "import { one } from '@fx/one';\nimport { two } from '@fx/two';\nexport const all = [one, two];\n",
};

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function check(changes: Files): Finding[] {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'check-imports-')));
  const files = { ...CLEAN, ...changes };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  // As pnpm links them: every workspace package under the root's node_modules, by name.
  for (const rel of Object.keys(files).filter((f) => /^(libs|services)\/[^/]+\/package\.json$/.test(f))) {
    const name = JSON.parse(files[rel]).name as string;
    const link = path.join(dir, 'node_modules', name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(dir, path.dirname(rel)), link, 'dir');
  }
  const sources = Object.keys(files)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
  const edges = importGraph(sources, { module: ts.ModuleKind.Preserve, moduleResolution: ts.ModuleResolutionKind.Bundler, noEmit: true });
  const ws = readWorkspace(dir);
  return [...boundaryFindings(ws, edges), ...cycleFindings(ws, edges)];
}

const rules = (findings: Finding[]) => findings.map((f) => f.rule).sort();

describe('the import boundary check', () => {
  it('finds nothing in a workspace that keeps the rules, where only the gateway imports services', () => {
    expect(check({})).toEqual([]);
  });

  it("finds an import of another package's src/, by name", () => {
    const found = check({ 'libs/b/src/index.ts': "import { inner } from '@fx/a/src/inner';\nexport const b = inner;\n" });
    expect(rules(found)).toEqual(['deep-import']);
    expect(found[0].message).toContain("libs/b/src/index.ts:1 '@fx/a/src/inner': not an entry of @fx/a's exports (@fx/a, @fx/a/testing)");
  });

  it('finds a relative import that leaves its package, however it is spelled', () => {
    expect(rules(check({ 'libs/b/src/index.ts': "import { inner } from '../../a/src/inner';\nexport const b = inner;\n" }))).toEqual([
      'leaves-package',
    ]);
    expect(rules(check({ 'services/one/src/index.ts': "export { b } from '../../../libs/b/src';\n" }))).toEqual(['leaves-package']);
  });

  it('finds a service importing another service, and a lib importing a service', () => {
    const found = check({
      'services/one/package.json': pkg('@fx/one', ['@fx/b', '@fx/two']),
      'services/one/src/index.ts': "import { two } from '@fx/two';\nexport const one = two;\n",
      'libs/b/package.json': pkg('@fx/b', ['@fx/a', '@fx/two']),
      'libs/b/src/index.ts': "export type { two } from '@fx/two';\nexport const b = 1;\n",
    });
    expect(rules(found)).toEqual(['cycle', 'service-import', 'service-import']);
  });

  it('finds an import of a workspace package the importer does not declare', () => {
    const found = check({ 'services/one/src/index.ts': "import { inner } from '@fx/a';\nexport const one = inner;\n" });
    expect(found.map((f) => f.message)).toEqual(["services/one/src/index.ts:1 '@fx/a': services/one/package.json does not declare @fx/a"]);
  });

  it('finds a package without an exports map', () => {
    expect(rules(check({ 'libs/a/package.json': pkg('@fx/a', [], null) }))).toEqual(['deep-import', 'exports-map']);
  });

  it('finds a cycle, type-only imports included, and names every file in it', () => {
    const found = check({
      'libs/a/src/inner.ts': "import type { Later } from './later';\nexport const inner = 1;\nexport type Inner = Later;\n",
      'libs/a/src/later.ts': "import { inner } from './inner';\nexport type Later = typeof inner;\n",
    });
    expect(found).toEqual([{ rule: 'cycle', message: 'import cycle: libs/a/src/inner.ts <-> libs/a/src/later.ts' }]);
  });

  it('finds an index that a module of its own package imports back', () => {
    const found = check({
      'libs/a/src/inner.ts': "import { helper } from './testing';\nexport const inner = helper;\nexport { inner as again } from '.';\n",
    });
    expect(rules(found)).toEqual(['cycle']);
  });
});
