/**
 * `pnpm test`'s boundary step: no import reaches into another package's files, none names an entry a package does
 * not export or a package it does not declare, no service imports another service, and no file takes part in an
 * import cycle (docs/decisions/007-package-boundaries.md). Exits 1 listing every finding.
 *
 *   node --import tsx scripts/check-imports.ts [root]
 */
import path from 'node:path';
import { importGraph, readProject } from './imports/graph';
import { boundaryFindings, cycleFindings } from './imports/rules';
import { readWorkspace } from './imports/workspace';

const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
const { files, options } = readProject(path.join(root, 'tsconfig.json'));
const ws = readWorkspace(root);
const edges = importGraph(files, options);
const findings = [...boundaryFindings(ws, edges), ...cycleFindings(ws, edges)];
for (const f of findings) process.stdout.write(`${f.rule}: ${f.message}\n`);
process.stdout.write(`${files.length} files, ${edges.length} imports: ${findings.length ? `${findings.length} findings` : 'no findings'}\n`);
process.exit(findings.length ? 1 : 0);
