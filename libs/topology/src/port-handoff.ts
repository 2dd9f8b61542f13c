/**
 * How `pnpm fleet` hands each process its ports (deploy/local-fleet.ts holds them; service-kit's claimHeldPort asks
 * for one just before listening), over the IPC channel the launcher opens to the processes it marks with
 * PORT_HANDOFF_ENV=1.
 */
export const PORT_HANDOFF_ENV = 'GATEWAY_PORT_HANDOFF';

export interface PortMessage {
  type: 'gateway:release-port' | 'gateway:port-released';
  port: number;
}

export const releaseRequest = (port: number): PortMessage => ({ type: 'gateway:release-port', port });
export const releasedAnswer = (port: number): PortMessage => ({ type: 'gateway:port-released', port });
const isMessage = (m: unknown, type: PortMessage['type']): m is PortMessage =>
  typeof m === 'object' && m !== null && (m as PortMessage).type === type && typeof (m as PortMessage).port === 'number';
export const isReleaseRequest = (m: unknown): m is PortMessage => isMessage(m, 'gateway:release-port');
export const isReleasedAnswer = (m: unknown): m is PortMessage => isMessage(m, 'gateway:port-released');
