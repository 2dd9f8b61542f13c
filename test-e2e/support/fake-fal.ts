import { startFakeFal as startLibFakeFal, type FakeFal, type FakeFalOptions } from '@gateway/upstreams/testing';
import { STATUS_PROBE_AGENT } from '@gateway/catalogue';

export type { FakeFal, FakeFalJob, FalRequest } from '@gateway/upstreams/testing';

/** @gateway/upstreams/testing's fake fal, leaving out the status monitor's probes as the other e2e fakes do (fake-server.ts). */
export const startFakeFal = (options: Omit<FakeFalOptions, 'unrecorded'> = {}): Promise<FakeFal> =>
  startLibFakeFal({ ...options, unrecorded: (headers) => headers['user-agent'] === STATUS_PROBE_AGENT });
