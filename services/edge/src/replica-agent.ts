import http from 'node:http';
import net from 'node:net';
import { CONNECT_TIMEOUT_MS, type ReplicaSet, neverReached } from '@gateway/topology';

const originOf = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * A keep-alive agent for the edge's hop to a service's replicas (the proxy picks the replica of each request with
 * `replicas.next()`). When a replica refuses the connection, the request has not been written yet, so the agent
 * ejects that replica and opens the connection to the next live one instead: the request, its body still unread,
 * goes there whole. A connection that opened and then broke is the proxy's error, as with one replica.
 */
export class ReplicaAgent extends http.Agent {
  constructor(
    private readonly replicas: ReplicaSet,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, done?: (err: Error | null, stream: net.Socket) => void): undefined {
    const tried = new Set<string>();
    const attempt = (origin: string) => {
      tried.add(origin);
      const url = new URL(origin);
      const socket = net.connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), noDelay: true });
      const timer = setTimeout(
        () => socket.destroy(Object.assign(new Error(`connect to ${origin} timed out`), { code: 'UND_ERR_CONNECT_TIMEOUT' })),
        CONNECT_TIMEOUT_MS,
      );
      const failed = (err: Error) => {
        clearTimeout(timer);
        if (neverReached(err)) {
          this.replicas.eject(origin);
          let next = this.replicas.next();
          if (tried.has(next)) next = this.replicas.targets.find((t) => !tried.has(t)) ?? next;
          if (!tried.has(next)) return attempt(next);
        }
        done?.(err, socket);
      };
      socket.once('error', failed);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', failed);
        done?.(null, socket);
      });
    };
    attempt(originOf(String(options.host ?? 'localhost'), Number(options.port ?? 80)));
    return undefined;
  }
}
