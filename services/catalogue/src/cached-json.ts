import type { Response } from 'express';

/** Public answers change only with the config, which is read once per process: clients may keep them a minute. */
export const PUBLIC_CACHE = 'public, max-age=60';

/** A body serialised once, at startup: every request sends the same bytes, with the public cache header. */
export function cachedJson(body: unknown): (res: Response) => void {
  const bytes = Buffer.from(JSON.stringify(body));
  return (res) => {
    res.setHeader('cache-control', PUBLIC_CACHE).type('application/json').send(bytes);
  };
}
