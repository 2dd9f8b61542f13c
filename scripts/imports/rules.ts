import path from 'node:path';
import type { ImportEdge } from './graph';
import type { Workspace, WorkspacePackage } from './workspace';

export interface Finding {
  rule: 'exports-map' | 'leaves-package' | 'deep-import' | 'service-import' | 'undeclared' | 'cycle';
  message: string;
}

/** The one package that may import services: the embedded gateway, which runs them all in one process. */
export const COMPOSERS = ['services/gateway'];

const isLib = (p: WorkspacePackage) => p.rel.startsWith('libs/');
const isService = (p: WorkspacePackage) => p.rel.startsWith('services/');

/** The package a bare specifier names (`@scope/name` or `name`) and the entry it asks for (`.`, `./testing`). */
function entryOf(specifier: string): { name: string; entry: string } | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const nameParts = specifier.startsWith('@') ? 2 : 1;
  const rest = parts.slice(nameParts).join('/');
  return { name: parts.slice(0, nameParts).join('/'), entry: rest ? `./${rest}` : '.' };
}

/**
 * A package is used through the entries its package.json `exports` map names, by a name it declares, and a
 * service uses libs only: the rules of docs/decisions/007-package-boundaries.md, on one resolved import graph.
 */
export function boundaryFindings(ws: Workspace, edges: ImportEdge[]): Finding[] {
  const findings: Finding[] = [];
  for (const p of ws.packages) {
    if ((isLib(p) || isService(p)) && !p.entries) findings.push({ rule: 'exports-map', message: `${p.rel}/package.json has no "exports" map` });
  }
  for (const edge of edges) {
    const where = `${path.relative(ws.root, edge.from)}:${edge.line} '${edge.specifier}'`;
    const from = ws.packageOf(edge.from);
    const named = entryOf(edge.specifier);
    const target = named ? ws.byName.get(named.name) : edge.to ? ws.packageOf(edge.to) : undefined;
    if (!target || target === from) continue;
    if (!named) {
      findings.push({ rule: 'leaves-package', message: `${where}: a relative import into ${target.rel}; import ${target.name} by name` });
      continue;
    }
    if (!(target.entries ?? ['.']).includes(named.entry)) {
      const entries = (target.entries ?? ['.']).map((e) => (e === '.' ? target.name : `${target.name}${e.slice(1)}`)).join(', ');
      findings.push({ rule: 'deep-import', message: `${where}: not an entry of ${target.name}'s exports (${entries})` });
    }
    if (!from.declared.has(target.name)) {
      findings.push({ rule: 'undeclared', message: `${where}: ${from.rel}/package.json does not declare ${target.name}` });
    }
    if (isService(target) && (isLib(from) || (isService(from) && !COMPOSERS.includes(from.rel)))) {
      findings.push({
        rule: 'service-import',
        message: `${where}: ${from.rel} imports the service ${target.rel}; services and libs depend on libs only`,
      });
    }
  }
  return findings;
}

/**
 * Import cycles among the tree's files, type-only imports included: a cycle of types still ties two modules into
 * one unit, and a value import added along it later would make it a load-order bug. Tarjan's strongly connected
 * components; each component of more than one file (or a file importing itself) is one finding.
 */
export function cycleFindings(ws: Workspace, edges: ImportEdge[]): Finding[] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!to) continue;
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)?.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next.get(v)?.has(v)) components.push(component);
  };
  for (const v of next.keys()) if (!index.has(v)) connect(v);
  return components.map((c) => ({
    rule: 'cycle' as const,
    message: `import cycle: ${c
      .map((f) => path.relative(ws.root, f))
      .sort()
      .join(' <-> ')}`,
  }));
}
