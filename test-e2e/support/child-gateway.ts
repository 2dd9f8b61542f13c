import net from 'node:net';
import path from 'node:path';
import { runEntry, type RunningProcess, waitFor } from '@gateway/testing';

/** A port free right now (the gateway must know its public URL before it listens, and keep it across a restart). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

/**
 * `pnpm start` as a child process on `dir`'s config.json and data directory, on `port`, answering once it returns
 * (the restart tests kill it and start it again on the same directory). The caller stops it.
 */
export async function startChildGateway(o: { dir: string; port: number; adminToken: string; env?: Record<string, string> }): Promise<RunningProcess> {
  const url = `http://127.0.0.1:${o.port}`;
  const p = runEntry('services/gateway/src/main.ts', {
    PORT: String(o.port),
    HOST: '127.0.0.1',
    METRICS_PORT: '0',
    GATEWAY_PUBLIC_URL: url,
    GATEWAY_CONFIG: path.join(o.dir, 'config.json'),
    GATEWAY_DATA_DIR: path.join(o.dir, 'data'),
    GATEWAY_ADMIN_TOKEN: o.adminToken,
    ...o.env,
  });
  let gone = false;
  void p.exited.then(() => (gone = true));
  try {
    await waitFor(
      async () => {
        if (gone) throw new Error(`the gateway exited before it answered:\n${p.output()}`);
        return (await fetch(`${url}/v1/models`).catch(() => undefined))?.ok === true;
      },
      'the gateway to answer',
      90_000,
    );
  } catch (e) {
    p.child.kill('SIGKILL');
    throw e;
  }
  return p;
}
