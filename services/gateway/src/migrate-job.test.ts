/**
 * The fleet's migrations as the cluster runs them: one Job, one container per service that keeps tables, each with
 * the migrate command (libs/topology) and its own database URL; FLEET_MIGRATIONS is the list they must match.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { migrateCommand } from '@gateway/topology';
import { FLEET_MIGRATIONS } from './fleet-migrations';

const ROOT = path.resolve(__dirname, '../../..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');

type Doc = { kind: string; spec: any };
const docsOf = (text: string): Doc[] =>
  YAML.parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);

describe('migrations run in a Job, once per service that keeps tables', () => {
  it('the services with tables are those whose chart values say database: required', () => {
    const values = YAML.parse(read('deploy/helm/model-gateway/values.yaml'));
    const required = Object.entries(values.services as Record<string, { database?: string }>)
      .filter(([, s]) => s.database === 'required')
      .map(([n]) => n);
    expect(required.sort()).toEqual(Object.keys(FLEET_MIGRATIONS).sort());
  });

  it('k8s/migrate-job.yaml runs the migrate command for each, with its own database URL', () => {
    const kustomization = YAML.parse(read('k8s/kustomization.yaml'));
    expect(kustomization.resources).toContain('migrate-job.yaml');
    const job = docsOf(read('k8s/migrate-job.yaml')).find((d) => d.kind === 'Job')!;
    const containers = job.spec.template.spec.containers as Array<{ name: string; command: string[]; env: any[] }>;
    expect(containers.map((c) => c.name).sort()).toEqual(Object.keys(FLEET_MIGRATIONS).sort());
    for (const c of containers) {
      expect(c.command).toEqual(migrateCommand(c.name));
      expect(c.env).toEqual([{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'gateway-secrets', key: `${c.name}-database-url` } } }]);
    }
  });

  it("the chart's hook Job template runs the same command", () => {
    const template = read('deploy/helm/model-gateway/templates/migrate-job.yaml');
    expect(template).toContain(`command: [${migrateCommand('').slice(0, -1).join(', ')}, {{ $name | quote }}]`);
    expect(template).toMatch(/helm\.sh\/hook: \{\{ \$hooks \}\}/);
    expect(template).toContain('{{- $hooks := "pre-install,pre-upgrade" }}');
  });
});
