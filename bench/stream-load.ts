/**
 * The load generator for streamed scenarios, in its own process: `spec.connections` undici clients (one keep-alive
 * connection each, no pipelining), each sending the request again as soon as the previous stream has ended, until
 * `spec.seconds` have passed. Per request it records the time to the first body byte (for a chat stream, the first
 * token: the gateway pulls the upstream's first chunk before it answers, Portkey relays the upstream's bytes) and
 * the time to the last. autocannon reports neither. A 2xx stream that ends without `data: [DONE]` counts as an
 * error. `node --import tsx bench/stream-load.ts '<LoadSpec as JSON>'` prints the LoadResult as one JSON line.
 */
import { Client } from 'undici';
import { childMain, type LoadResult, type LoadSpec } from './load';
import { monotonicUs, Samples } from './stats';

export async function runStream(spec: LoadSpec): Promise<LoadResult> {
  const url = new URL(spec.url);
  const ttfb = new Samples();
  const total = new Samples();
  let requests = 0;
  let errors = 0;
  let non2xx = 0;
  const cpu0 = process.cpuUsage();
  const fromUs = monotonicUs();
  const started = performance.now();
  const deadline = started + spec.seconds * 1000;

  const connection = async () => {
    const client = new Client(url.origin, { pipelining: 1, keepAliveTimeout: 60_000 });
    try {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        try {
          const res = await client.request({ path: url.pathname + url.search, method: spec.method, headers: spec.headers, body: spec.body });
          let first = 0;
          let tail = '';
          for await (const chunk of res.body) {
            if (first === 0) first = performance.now();
            tail = (tail + (chunk as Buffer).toString('latin1')).slice(-32);
          }
          const t1 = performance.now();
          requests++;
          if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
          else if (!tail.includes('[DONE]')) errors++;
          else {
            ttfb.push(first - t0);
            total.push(t1 - t0);
          }
        } catch {
          errors++;
          await new Promise((r) => setTimeout(r, 10)); // a refused connection must not spin
        }
      }
    } finally {
      await client.close().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, connection));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    requests,
    seconds,
    rps: requests / seconds,
    latency: total.summary(),
    ttfb: ttfb.summary(),
    errors,
    non2xx,
    cpuMs: (cpu.user + cpu.system) / 1000,
    window: { fromUs, toUs: monotonicUs() },
  };
}

if (require.main === module) childMain(runStream);
