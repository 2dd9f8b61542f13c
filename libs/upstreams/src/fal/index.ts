import type { QueueProtocol } from '../types';
import { guardedAgent } from '../origin-guard';
import { download } from './download';
import { createFalClient, requestUrls, submitUrl, withLogs } from './request';
import { failureOf, readOutput, readStatus, readTicket } from './response';

/**
 * fal's queue (`kind: fal`, base_url `https://queue.fal.run`): submit to the model's endpoint path, then poll,
 * fetch and cancel under its app id. The input is the model's own, sent untouched.
 */
export function createFalProtocol(env: NodeJS.ProcessEnv = process.env): QueueProtocol {
  const client = createFalClient(env);

  return {
    async submit(ep, input, opts) {
      const res = await client.send(ep, { method: 'POST', url: submitUrl(ep), body: input, signal: opts.signal, requestId: opts.requestId });
      if (res.statusCode >= 400) throw await failureOf(res, 'submit');
      return readTicket(res);
    },
    async status(ep, ticket, opts) {
      const url = requestUrls(ep, ticket).status;
      const res = await client.send(ep, { method: 'GET', url: opts.logs ? withLogs(url) : url, signal: opts.signal });
      if (res.statusCode >= 400) throw await failureOf(res, 'status');
      return readStatus(res, opts.logs);
    },
    async result(ep, ticket, opts) {
      const res = await client.send(ep, { method: 'GET', url: requestUrls(ep, ticket).result, signal: opts.signal });
      if (res.statusCode >= 400) throw await failureOf(res, 'result');
      return readOutput(res);
    },
    /**
     * fal answers 400 ALREADY_COMPLETED for a finished request and 404 for one it no longer knows: both mean
     * there is nothing left to stop. Only a failure to reach fal (or its 5xx) is thrown, so the caller can log it.
     */
    async cancel(ep, ticket, opts) {
      const res = await client.send(ep, { method: 'PUT', url: requestUrls(ep, ticket).cancel, signal: opts.signal });
      if (res.statusCode < 300 || res.statusCode === 400 || res.statusCode === 404) return void (await res.body.dump().catch(() => undefined));
      throw await failureOf(res, 'cancel');
    },
    /**
     * The file a result links to is fetched through a guarded agent: base_url's origin, or a public address (a CDN);
     * never the gateway's own network, which a URL in the upstream's answer could otherwise name (SSRF).
     */
    async download(ep, url, opts) {
      const agent = guardedAgent({ trustedOrigins: ep.provider.base_url ? [ep.provider.base_url] : [] });
      try {
        return await download(ep, url, { agent, env, signal: opts.signal });
      } finally {
        void agent.close().catch(() => undefined);
      }
    },
  };
}
