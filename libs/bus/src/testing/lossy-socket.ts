/** Test support only: kafkajs sockets that lose a produce answer on request, as a cut connection or a failover does. */
import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory } from 'kafkajs';

const PRODUCE_API_KEY = 0;

/**
 * `socketFactory` for a kafkajs client. After `loseNextProduceAnswer()`, the next answer to a produce request is
 * dropped and its connection cut once the broker has written the records: the client then sees its request fail
 * and sends it again, which is when a producer that is not idempotent writes the records a second time.
 */
export function lossySockets(): { socketFactory: ISocketFactory; loseNextProduceAnswer(): Promise<void> } {
  let armed: (() => void) | undefined;
  const socketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    const socket = ssl ? tls.connect({ host, port, ...ssl }, onConnect) : net.connect({ host, port }, onConnect);
    const produces = new Set<number>();
    const write = socket.write.bind(socket) as (chunk: Buffer, ...rest: unknown[]) => boolean;
    // kafkajs writes each request whole: size (int32), api key (int16), api version (int16), correlation id (int32).
    socket.write = ((chunk: Buffer, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk) && chunk.length >= 12 && chunk.readInt16BE(4) === PRODUCE_API_KEY) produces.add(chunk.readInt32BE(8));
      return write(chunk, ...rest);
    }) as typeof socket.write;
    let pending = Buffer.alloc(0);
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === 'data' && Buffer.isBuffer(args[0])) {
        // Answers: size (int32), correlation id (int32); a chunk may hold several, or part of one.
        pending = Buffer.concat([pending, args[0]]);
        while (pending.length >= 8 && pending.length >= 4 + pending.readInt32BE(0)) {
          const correlation = pending.readInt32BE(4);
          pending = pending.subarray(4 + pending.readInt32BE(0));
          if (armed && produces.has(correlation)) {
            const lost = armed;
            armed = undefined;
            socket.destroy(new Error('test: connection cut before the produce answer'));
            lost();
            return true;
          }
        }
      }
      return emit(event, ...args);
    }) as typeof socket.emit;
    socket.setKeepAlive(true, 60_000);
    return socket;
  };
  return { socketFactory, loseNextProduceAnswer: () => new Promise<void>((resolve) => (armed = resolve)) };
}
