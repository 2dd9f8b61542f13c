import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EDGE, EMBEDDED_COMMAND, SERVICES, migrateCommand, serviceCommand } from '@gateway/topology';
import { ENTRIES, buildIfStale, staleReason, writeStamp } from './build';

const ROOT = path.resolve(__dirname, '..');

/** A checkout in a temporary directory: two sources, and a dist/ with every bundle's file. */
function fakeCheckout(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-build-'));
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
  fs.writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 2;\n');
  fs.mkdirSync(path.join(root, 'dist'));
  for (const name of Object.keys(ENTRIES)) fs.writeFileSync(path.join(root, 'dist', `${name}.cjs`), '');
  return root;
}

describe('pnpm build, --if-stale', () => {
  let root: string;
  beforeEach(() => {
    root = fakeCheckout();
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('builds when nothing was built yet, and not again while every input is as the build found it', async () => {
    const rebuild = jest.fn(async () => writeStamp(root, ['src/a.ts', 'src/b.ts']));
    expect(await buildIfStale(root, rebuild)).toBe('no build yet');
    expect(rebuild).toHaveBeenCalledTimes(1);
    expect(await buildIfStale(root, rebuild)).toBeUndefined();
    expect(rebuild).toHaveBeenCalledTimes(1);
  });

  it('rebuilds when a source changes, even at the same size, and when one is deleted', async () => {
    const rebuild = jest.fn(async () => writeStamp(root, ['src/a.ts', 'src/b.ts']));
    writeStamp(root, ['src/a.ts', 'src/b.ts']);
    fs.writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 3;\n');
    const later = new Date(fs.statSync(path.join(root, 'src', 'a.ts')).mtimeMs + 5_000);
    fs.utimesSync(path.join(root, 'src', 'b.ts'), later, later);
    expect(await buildIfStale(root, rebuild)).toBe('src/b.ts changed');
    expect(rebuild).toHaveBeenCalledTimes(1);
    expect(staleReason(root)).toBeUndefined();

    fs.rmSync(path.join(root, 'src', 'a.ts'));
    expect(await buildIfStale(root, async () => {})).toBe('src/a.ts changed');
  });

  it('rebuilds when a bundle is missing from dist/', () => {
    writeStamp(root, ['src/a.ts']);
    fs.rmSync(path.join(root, 'dist', 'edge.cjs'));
    expect(staleReason(root)).toBe('dist/edge.cjs is missing');
  });

  it('bundles every command the fleet, the image and the chart run, each from its entry point', () => {
    const bundleOf = (argv: string[]) => /^dist\/(.+)\.cjs$/.exec(argv.find((a) => a.startsWith('dist/')) ?? '')?.[1];
    for (const name of [EDGE.name, ...SERVICES.map((s) => s.name)])
      expect({ name, entry: ENTRIES[bundleOf(serviceCommand(name))!] }).toEqual({ name, entry: `services/${name}/src/main.ts` });
    expect(ENTRIES[bundleOf(EMBEDDED_COMMAND)!]).toBe('services/gateway/src/main.ts');
    expect(ENTRIES[bundleOf(migrateCommand('billing'))!]).toBe('services/gateway/src/migrate.ts');
    for (const entry of Object.values(ENTRIES)) expect({ entry, exists: fs.existsSync(path.join(ROOT, entry)) }).toEqual({ entry, exists: true });
  });
});
