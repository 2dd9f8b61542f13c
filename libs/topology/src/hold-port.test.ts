import net from 'node:net';
import { holdPort } from './hold-port';

const listening = (server: net.Server, port = 0) =>
  new Promise<number>((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
const closed = (server: net.Server) => new Promise((resolve) => server.close(resolve));

describe('holdPort', () => {
  it('fails at once with EADDRINUSE when another server listens on the port', async () => {
    const other = net.createServer();
    const port = await listening(other);
    const onWait = jest.fn();
    await expect(holdPort(port, '127.0.0.1', { waitMs: 60_000, onWait })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(onWait).not.toHaveBeenCalled();
    await closed(other);
  });

  it('waits while an outbound connection holds the port as its local end, and holds it once that connection is gone', async () => {
    const peers: net.Socket[] = [];
    const remote = net.createServer((s) => peers.push(s));
    const remotePort = await listening(remote);
    // An ephemeral local end, as the kernel hands out for any outbound connection.
    const client = net.connect(remotePort, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    const port = client.localPort!;

    const onWait = jest.fn();
    const held = holdPort(port, '127.0.0.1', { waitMs: 20_000, retryMs: 20, onWait });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(onWait).toHaveBeenCalledTimes(1);
    // The far end closes first, so the TIME_WAIT is its own and the client's port is free again.
    const gone = new Promise((resolve) => client.once('close', resolve));
    for (const p of peers) p.end();
    await gone;
    const server = await held;
    expect((server.address() as net.AddressInfo).port).toBe(port);
    await closed(server);
    await closed(remote);
  });

  it('gives up with EADDRINUSE when the port stays taken past waitMs (a connection of its own in TIME_WAIT)', async () => {
    const remote = net.createServer((s) => s.on('end', () => s.end()));
    const remotePort = await listening(remote);
    const client = net.connect(remotePort, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    const port = client.localPort!;
    const gone = new Promise((resolve) => client.once('close', resolve));
    client.end();
    await gone;
    const started = Date.now();
    await expect(holdPort(port, '127.0.0.1', { waitMs: 300, retryMs: 50 })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    await closed(remote);
  });
});
