import type { Request } from 'express';
import { readEnv } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { deployed, notDeployed } from './proxy';

describe('a service the deployment leaves out (the chart with services.<name>.enabled false)', () => {
  it('is one whose URL variable is unset; the edge then starts and answers its routes 404 instead of crash-looping', () => {
    const env = readEnv({ BILLING_URL: 'http://billing:8081', TEXT_URL: 'http://text:8082' });
    expect({ text: deployed(env, 'text'), mcp: deployed(env, 'mcp') }).toEqual({ text: true, mcp: false });
    let refused: unknown;
    notDeployed('mcp')({} as Request, {} as never, (err?: unknown) => {
      refused = err;
    });
    expect(refused).toBeInstanceOf(GatewayError);
    expect({ status: (refused as GatewayError).status, code: (refused as GatewayError).code }).toEqual({ status: 404, code: 'not_found' });
    expect((refused as GatewayError).message).toContain('mcp');
  });
});
