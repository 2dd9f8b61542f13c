import type net from 'node:net';

/** Open connections one listener accepts (HTTP_MAX_CONNECTIONS): far below a file-descriptor limit of 20,000. */
export const DEFAULT_MAX_CONNECTIONS = 8192;
/** Open connections the public listener accepts from one client address (HTTP_MAX_CONNECTIONS_PER_ADDRESS). */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 512;

export interface ConnectionLimits {
  /** Every connection past this many open ones is closed as it is accepted. */
  max: number;
  /** Past this many open connections from one address, that address's next ones are closed as accepted; 0: no limit. */
  perAddress: number;
}

export type RefusedBecause = 'total' | 'address';

/**
 * Bounds what one listener holds open, so that idle or half-sent connections (each a file descriptor until the
 * headers timeout cuts it) can never take every descriptor of the process, and one client can never take them all
 * from the others. An excess connection is closed the moment it is accepted, before any byte of it is read: the
 * cheapest refusal there is, and one that holds nothing. A client refused so sees a reset connection, which HTTP
 * clients and SDKs retry.
 */
export function limitConnections(server: net.Server, limits: ConnectionLimits, onRefused: (why: RefusedBecause) => void = () => {}): void {
  // Node closes a connection past maxConnections before it makes a socket of it, and says so with 'drop'.
  server.maxConnections = limits.max;
  server.on('drop', () => onRefused('total'));
  if (limits.perAddress <= 0) return;
  const open = new Map<string, number>();
  // Before the HTTP server's own listener, so a refused socket is destroyed before its parser can read a byte.
  server.prependListener('connection', (socket: net.Socket) => {
    const address = socket.remoteAddress;
    // No address: the peer is already gone.
    if (address === undefined) return void socket.destroy();
    const count = open.get(address) ?? 0;
    if (count >= limits.perAddress) {
      socket.destroy();
      onRefused('address');
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}
