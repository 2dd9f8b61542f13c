import fs from 'node:fs';
import path from 'node:path';

export interface WorkspacePackage {
  name: string;
  /** Absolute directory holding its package.json. */
  dir: string;
  /** Relative to the workspace root, with forward slashes: `libs/db`, `services/jobs`, `test-e2e`, `.`. */
  rel: string;
  /** Keys of its `exports` map (`.`, `./testing`), or undefined when it has none. */
  entries?: string[];
  /** Every package it declares, production or development. */
  declared: Set<string>;
}

export interface Workspace {
  root: string;
  packages: WorkspacePackage[];
  byName: Map<string, WorkspacePackage>;
  /** The package a file belongs to: the deepest package directory holding it. */
  packageOf(file: string): WorkspacePackage;
}

/** The packages pnpm-workspace.yaml lists (its `dir/*` and `dir` lines), and the root package. */
export function readWorkspace(root: string): Workspace {
  const yaml = fs.readFileSync(path.join(root, 'pnpm-workspace.yaml'), 'utf8');
  // The `packages:` list only: the lines up to the next top-level key.
  const listed = yaml.split(/^packages:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
  const globs = [...listed.matchAll(/^\s*-\s*['"]?([\w./*-]+)['"]?\s*$/gm)].map((m) => m[1]);
  const dirs = ['.'];
  for (const glob of globs) {
    if (!glob.endsWith('/*')) dirs.push(glob);
    else {
      const parent = glob.slice(0, -2);
      for (const d of fs.readdirSync(path.join(root, parent), { withFileTypes: true })) if (d.isDirectory()) dirs.push(`${parent}/${d.name}`);
    }
  }
  const packages = dirs
    .filter((rel) => fs.existsSync(path.join(root, rel, 'package.json')))
    .map((rel): WorkspacePackage => {
      const json = JSON.parse(fs.readFileSync(path.join(root, rel, 'package.json'), 'utf8'));
      const exportsMap = json.exports;
      const entries = exportsMap === undefined ? undefined : typeof exportsMap === 'string' ? ['.'] : Object.keys(exportsMap);
      return {
        name: json.name,
        dir: path.join(root, rel),
        rel,
        entries,
        declared: new Set([...Object.keys(json.dependencies ?? {}), ...Object.keys(json.devDependencies ?? {})]),
      };
    });
  const byDepth = [...packages].sort((a, b) => b.dir.length - a.dir.length);
  return {
    root,
    packages,
    byName: new Map(packages.map((p) => [p.name, p])),
    packageOf(file) {
      const found = byDepth.find((p) => p.rel === '.' || file === p.dir || file.startsWith(p.dir + path.sep));
      if (!found) throw new Error(`${file} is outside the workspace`);
      return found;
    },
  };
}
