import { PORT_HANDOFF_ENV, isReleasedAnswer, releaseRequest } from '@gateway/topology';

/**
 * `pnpm fleet` (deploy/local-fleet.ts) holds every port of its processes from before the first one starts until the
 * process about to listen on it asks for it here. Without that, a port of the fleet's fixed layout (PORT + n) that
 * lies in the ephemeral range can be taken, while the fleet comes up, as the local end of an outbound connection (a
 * service's first PostgreSQL or Redis connection), and the listen then fails with EADDRINUSE. Resolves once the
 * launcher has let go of `port`; at once in a process nobody holds ports for.
 */
export function claimHeldPort(port: number): Promise<void> {
  const send = process.send?.bind(process);
  if (!send || process.env[PORT_HANDOFF_ENV] !== '1' || port === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const onMessage = (m: unknown) => {
      if (!isReleasedAnswer(m) || m.port !== port) return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
    send(releaseRequest(port));
  });
}
