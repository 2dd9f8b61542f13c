import fs from 'node:fs';
import path from 'node:path';
import { ENV_VARIABLES } from './env';

/** docs/operations.md lists every variable the schema reads, and none it does not. */
describe('docs/operations.md, "Every environment variable"', () => {
  const doc = fs.readFileSync(path.resolve(__dirname, '../../../docs/operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Every environment variable'), doc.indexOf('\n## ', doc.indexOf('## Every environment variable') + 1));
  const documented = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]);

  it('lists each variable of the schema with its default', () => {
    expect([...documented].sort()).toEqual([...ENV_VARIABLES].sort());
  });
});
