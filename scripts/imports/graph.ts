import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface ImportEdge {
  from: string;
  /** The file it resolves to, or undefined when the compiler cannot resolve it. */
  to?: string;
  specifier: string;
  /** `import type`, `export type`, or every name marked `type`: erased, so no load happens at run time. */
  typeOnly: boolean;
  line: number;
}

/** The files and options of a tsconfig, resolved as `tsc -p` does. */
export function readProject(tsconfig: string): { files: string[]; options: ts.CompilerOptions } {
  const read = ts.readConfigFile(tsconfig, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(tsconfig));
  return { files: parsed.fileNames.map((f) => path.resolve(f)), options: parsed.options };
}

/**
 * Every import of the given files (static, re-export, `import()`, `require()`), resolved with the compiler's own
 * module resolution and options, so the graph is the one the type-check sees. Files under node_modules are
 * resolved to their real path, which is how a workspace package reached by name lands back in the tree.
 */
export function importGraph(files: string[], options: ts.CompilerOptions): ImportEdge[] {
  const cache = ts.createModuleResolutionCache(process.cwd(), (f) => f, options);
  const edges: ImportEdge[] = [];
  for (const from of files) {
    const source = ts.createSourceFile(from, fs.readFileSync(from, 'utf8'), ts.ScriptTarget.Latest, true);
    for (const { specifier, typeOnly, pos } of importsOf(source)) {
      const resolved = ts.resolveModuleName(specifier, from, options, ts.sys, cache).resolvedModule;
      const to = resolved && fs.realpathSync(resolved.resolvedFileName);
      // Third-party packages are not the tree's; a workspace package's real path is.
      if (to?.split(path.sep).includes('node_modules')) continue;
      edges.push({ from, to, specifier, typeOnly, line: source.getLineAndCharacterOfPosition(pos).line + 1 });
    }
  }
  return edges;
}

function importsOf(source: ts.SourceFile): { specifier: string; typeOnly: boolean; pos: number }[] {
  const found: { specifier: string; typeOnly: boolean; pos: number }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: importIsTypeOnly(node.importClause), pos: node.getStart() });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      const typeOnly = node.isTypeOnly || (named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly));
      found.push({ specifier: node.moduleSpecifier.text, typeOnly, pos: node.getStart() });
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0])) {
      const dynamic = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const required = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (dynamic || required) found.push({ specifier: node.arguments[0].text, typeOnly: false, pos: node.getStart() });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true, pos: node.getStart() });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function importIsTypeOnly(clause: ts.ImportClause | undefined): boolean {
  if (!clause) return false; // `import './x'`: loaded for its effects
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined;
  return clause.name === undefined && named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly);
}
