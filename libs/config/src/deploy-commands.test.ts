/**
 * How the containers start and stop (issue 34, defects 2, 3 and 10), held to one definition: libs/topology's
 * commands, which `pnpm fleet` runs and test-e2e/reliability/container-stop.e2e.ts stops under load. The chart's
 * rendering is checked with Helm's engine elsewhere; its values and k8s/ are read here.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { EDGE, EMBEDDED_COMMAND, EMBEDDED_MALLOC_TUNABLES, EMBEDDED_V8_FLAGS, SERVICES, serviceCommand } from '@gateway/topology';

const ROOT = path.resolve(__dirname, '../../..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');
const NAMES = [EDGE.name, ...SERVICES.map((s) => s.name)];

type Doc = { kind: string; metadata: { name: string }; spec: any };
const docsOf = (text: string): Doc[] =>
  YAML.parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);

describe('containers start as node running a bundle, never under the tsx CLI', () => {
  it.each(NAMES)('k8s/%s.yaml and the chart run the service command', (name) => {
    const deployment = docsOf(read(`k8s/${name}.yaml`)).find((d) => d.kind === 'Deployment')!;
    expect(deployment.spec.template.spec.containers[0].command).toEqual(serviceCommand(name));
    const values = YAML.parse(read('deploy/helm/model-gateway/values.yaml'));
    expect(values.services[name].command).toEqual(serviceCommand(name));
  });

  it("the image's default command is the embedded gateway's bundle, which the build stage makes with esbuild, a production dependency", () => {
    const dockerfile = read('deploy/Dockerfile');
    const cmd = dockerfile.match(/^CMD (\[.*\])$/m);
    expect(cmd && JSON.parse(cmd[1])).toEqual(EMBEDDED_COMMAND);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile --offline --prod [^\n]*\\\n(?: && [^\n]*\\\n)* && node scripts\/build\.js \\\n/);
    const pkg = JSON.parse(read('package.json'));
    for (const dep of ['esbuild', 'tsx'])
      expect({ dep, prod: pkg.dependencies[dep] !== undefined, dev: pkg.devDependencies[dep] }).toEqual({ dep, prod: true, dev: undefined });
  });

  it('no manifest, value or doc still starts a process with the tsx CLI', () => {
    const files = ['deploy/Dockerfile', 'deploy/helm/model-gateway/values.yaml', 'docs/deploy.md', ...NAMES.map((n) => `k8s/${n}.yaml`)];
    for (const file of files) expect({ file, cli: /node_modules\/\.bin\/tsx/.test(read(file)) }).toEqual({ file, cli: false });
  });
});

describe('the drain fits the grace period', () => {
  it.each(NAMES)('k8s/%s.yaml: DRAIN_TIMEOUT_MS is the grace period minus the preStop sleep', (name) => {
    const pod = docsOf(read(`k8s/${name}.yaml`)).find((d) => d.kind === 'Deployment')!.spec.template.spec;
    const container = pod.containers[0];
    const sleep = container.lifecycle?.preStop?.exec?.command;
    expect(sleep?.[0]).toBe('sleep');
    const drain = container.env.find((v: { name: string }) => v.name === 'DRAIN_TIMEOUT_MS')?.value;
    expect(Number(drain)).toBe((pod.terminationGracePeriodSeconds - Number(sleep[1])) * 1000);
  });
});

describe('the image', () => {
  it("the build context leaves out installed packages and a developer's local data", () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const p of ['node_modules', '**/node_modules', '.gateway-data', '.gateway-fleet-data', '.git', '.env', 'test-e2e'])
      expect(ignored).toContain(p);
    // And the Dockerfile drops them again, for a build run without that file.
    expect(read('deploy/Dockerfile')).toMatch(/rm -rf [^\n]*\.gateway-fleet-data/);
  });

  it('installs production dependencies only', () => {
    const dockerfile = read('deploy/Dockerfile');
    expect(dockerfile).toMatch(/pnpm fetch --prod /);
    expect(dockerfile).toMatch(/pnpm install [^\n]*--prod /);
    expect(dockerfile).not.toMatch(/--prod=false/);
  });
});

describe('`pnpm start` on glibc', () => {
  const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;

  it.each(['start', 'start:source'])('%s gives freed memory back (EMBEDDED_MALLOC_TUNABLES), after the tunables its caller set', (name) => {
    const [, prefix] = scripts[name].match(/(?:^|&& )(GLIBC_TUNABLES=\S+) exec node /) ?? [];
    expect(prefix).toBeDefined();
    // The shell the script runs in makes of it what node is started with.
    const env = (inherited?: string) =>
      execFileSync('sh', ['-c', `${prefix} exec env`], {
        env: { PATH: process.env.PATH, ...(inherited ? { GLIBC_TUNABLES: inherited } : {}) },
        encoding: 'utf8',
      })
        .split('\n')
        .find((l) => l.startsWith('GLIBC_TUNABLES='));
    expect(env()).toBe(`GLIBC_TUNABLES=${EMBEDDED_MALLOC_TUNABLES}`);
    expect(env('glibc.malloc.arena_max=2')).toBe(`GLIBC_TUNABLES=glibc.malloc.arena_max=2:${EMBEDDED_MALLOC_TUNABLES}`);
  });

  it('start runs the image’s embedded command', () => {
    expect(scripts.start).toMatch(new RegExp(`exec ${EMBEDDED_COMMAND.join(' ').replace(/[.]/g, '\\.')}$`));
  });

  it('start:source runs the same V8 flags as the image, on the source', () => {
    expect(scripts['start:source']).toMatch(new RegExp(` exec node ${EMBEDDED_V8_FLAGS.join(' ')} --import tsx `));
  });
});
