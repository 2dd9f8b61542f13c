/**
 * What stands in front of the edge's replicas in the local fleet: the cluster's Service (kube-proxy) does the same
 * job there, per TCP connection. Each client connection goes to the next edge replica in turn; one that refuses it
 * (killed, restarting) is ejected for a few seconds and the connection goes to the next, as a service's callers do
 * (@gateway/topology's ReplicaSet). Bytes are piped both ways untouched: TLS, HTTP/1.1 keep-alive and SSE alike.
 */
import net from 'node:net';
import { CONNECT_TIMEOUT_MS, ReplicaSet, neverReached } from '@gateway/topology';

export interface EdgeFront {
  close(): Promise<void>;
}

export function startEdgeFront(listen: { port: number; host: string }, edges: readonly { port: number; host: string }[]): Promise<EdgeFront> {
  const replicas = new ReplicaSet(edges);
  const open = new Set<net.Socket>();
  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    const tried = new Set<(typeof edges)[number]>();
    const attempt = (edge: (typeof edges)[number]) => {
      tried.add(edge);
      const upstream = net.connect({ ...edge, noDelay: true });
      const timer = setTimeout(
        () => upstream.destroy(Object.assign(new Error('connect timed out'), { code: 'UND_ERR_CONNECT_TIMEOUT' })),
        CONNECT_TIMEOUT_MS,
      );
      const failed = (err: Error) => {
        clearTimeout(timer);
        if (neverReached(err) && !client.destroyed) {
          replicas.eject(edge);
          let next = replicas.next();
          if (tried.has(next)) next = replicas.targets.find((t) => !tried.has(t)) ?? next;
          if (!tried.has(next)) return attempt(next);
        }
        client.destroy();
      };
      upstream.once('error', failed);
      upstream.once('connect', () => {
        clearTimeout(timer);
        upstream.removeListener('error', failed);
        open.add(upstream);
        upstream.once('close', () => open.delete(upstream));
        // Either side gone takes the other with it: a killed edge cuts its clients' connections, as in a cluster.
        upstream.on('error', () => client.destroy());
        upstream.once('close', () => client.destroy());
        client.once('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(replicas.next());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.removeListener('error', reject);
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
