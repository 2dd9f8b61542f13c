// Bundles the pages' browser code (browser/*.ts) into dist/, minified, one ES module per page. Run by `pnpm install`
// (this package's prepare script), so a fresh clone's `pnpm install && pnpm start` serves the pages; `pnpm --filter
// @gateway/web-pages build` after editing them. Prints each bundle's size, raw and gzipped (the budget is 150 KB
// gzipped per page).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { build } from 'esbuild';

const root = path.dirname(fileURLToPath(import.meta.url));
const PAGES = ['status', 'console', 'admin'];

const result = await build({
  absWorkingDir: root,
  entryPoints: PAGES.map((p) => `browser/${p}.ts`),
  outdir: 'dist',
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  platform: 'browser',
  write: true,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
for (const [file, out] of Object.entries(result.metafile.outputs)) {
  const bytes = (await import('node:fs')).readFileSync(path.join(root, file));
  process.stdout.write(
    `web-pages: ${file} ${(out.bytes / 1024).toFixed(1)} KB, ${(zlib.gzipSync(bytes, { level: 9 }).length / 1024).toFixed(1)} KB gzipped\n`,
  );
}
