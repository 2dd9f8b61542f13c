import { pipeline } from 'node:stream/promises';
import type { Request, Response } from 'express';
import { Pool } from 'undici';
import { GatewayError } from '@gateway/errors';
import { INTERNAL, contextOf } from '@gateway/service-kit';
import { CONNECT_TIMEOUT_MS, POOLED_IDLE, ReplicaSet, addressList } from '@gateway/topology';
import type { MediaFilesPort } from './port';

/** Headers of the media service's file answer that reach the client (its own cache and range headers). */
const PASSED = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'cache-control', 'last-modified'];
const unreachable = () => new GatewayError('upstream_unavailable', 'The media service is unreachable; try again shortly');

/**
 * The fleet's media service over its internal API, with the edge's headers of the request passed on. `baseUrl` may
 * list its replicas, comma-separated: a keep-alive pool each, round-robin, a refusing one skipped (@gateway/topology).
 */
export function httpMediaFiles(baseUrl: string, internalToken: string | undefined): MediaFilesPort & { close(): Promise<void> } {
  const pools = new Map(
    addressList(baseUrl).map((url) => [url, new Pool(url, { connections: 16, ...POOLED_IDLE, connect: { timeout: CONNECT_TIMEOUT_MS } })]),
  );
  const replicas = new ReplicaSet([...pools.keys()]);
  const pool = { request: (options: Parameters<Pool['request']>[0]) => replicas.call((url) => (pools.get(url) as Pool).request(options)) };
  const token = internalToken ? { [INTERNAL.token]: internalToken } : {};
  return {
    async keep(owner, bytes, contentType) {
      const res = await pool
        .request({
          path: `/internal/files?content_type=${encodeURIComponent(contentType)}`,
          method: 'POST',
          headers: {
            ...token,
            'content-type': 'application/octet-stream',
            [INTERNAL.accountId]: owner.accountId,
            [INTERNAL.keyId]: 'jobs',
            [INTERNAL.requestId]: owner.requestId,
          },
          body: bytes,
        })
        .catch(() => {
          throw unreachable();
        });
      const json = (await res.body.json().catch(() => undefined)) as { data?: { id?: string } } | undefined;
      if (res.statusCode === 201 && typeof json?.data?.id === 'string') return { id: json.data.id };
      throw GatewayError.fromEnvelope(res.statusCode, json) ?? unreachable();
    },
    async serve(req: Request, res: Response, fileId: string) {
      const ctx = contextOf(req);
      const answer = await pool
        .request({
          path: `/v1/files/${encodeURIComponent(fileId)}`,
          method: 'GET',
          headers: {
            ...token,
            [INTERNAL.accountId]: ctx.accountId,
            [INTERNAL.keyId]: ctx.keyId,
            [INTERNAL.requestId]: ctx.requestId,
            ...(req.headers.range ? { range: req.headers.range } : {}),
          },
        })
        .catch(() => {
          throw unreachable();
        });
      if (answer.statusCode >= 400) {
        const json = await answer.body.json().catch(() => undefined);
        throw GatewayError.fromEnvelope(answer.statusCode, json) ?? unreachable();
      }
      res.status(answer.statusCode);
      for (const name of PASSED) {
        const value = answer.headers[name];
        if (value !== undefined) res.setHeader(name, value);
      }
      await pipeline(answer.body, res);
    },
    close: () => Promise.all([...pools.values()].map((p) => p.close())).then(() => undefined),
  };
}
