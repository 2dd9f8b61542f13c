/**
 * `pnpm soak`: the embedded gateway (`pnpm start`, PGlite on disk) under a long load at 70 % of its measured peak,
 * half the calls streamed: RSS sampled all along, every answer counted, then the ledger read from the data directory
 * and checked (held = the open holds, usage = the charges and the records, no hold open, available never negative,
 * every charge what its call cost). SOAK_FAULTS=1 has the upstream fail 5 % of its answers (the model's second
 * endpoint then answers: failover) and cut 5 % of its streams after the first words (charged for what was delivered).
 *
 * SOAK_MINUTES (10), SOAK_WARMUP_MINUTES (1), SOAK_CONNECTIONS (50), SOAK_SHARE (0.7 of the peak), SOAK_RATE
 * (requests/s; skips the peak run), SOAK_RSS_LIMIT_MIB (350, issue 36's: the soak fails when any RSS sample of the
 * measured minutes is above it; 0 for no limit). The warm-up runs the soak's load before the measured minutes: RSS is compared from
 * the first measured minute to the last, so the climb from an idle process to the working set at that rate (V8 sizing
 * its heap, PGlite's memory growing to the write-behind's batches) is not read as growth. Its answers and errors count.
 * Never part of `pnpm test`: it is eleven minutes of a machine's full attention.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openServiceDb } from '@gateway/db';
import { migrations as billingMigrations } from '@gateway/billing';
import { killAllChildren, lineMatching, ROOT, runJsonChild, spawnNode } from './procs';
import type { SoakLoadResult, SoakLoadSpec } from './soak-load';
import { startEmbedded } from './targets';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const WARMUP_MINUTES = Number(process.env.SOAK_WARMUP_MINUTES ?? 1);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 50);
const SHARE = Number(process.env.SOAK_SHARE ?? 0.7);
const RSS_LIMIT_MIB = Number(process.env.SOAK_RSS_LIMIT_MIB ?? 350);
const FAULTS = !!process.env.SOAK_FAULTS && process.env.SOAK_FAULTS !== '0';
/** What one call costs at the soak model's prices: the zero upstream reports 3 + 1 tokens, streamed 3 + 3. */
const PRICE = { prompt: 1_000n, completion: 2_000n }; // nano-USD per token (0.000001 and 0.000002 USD)
const CALL_COST = 3n * PRICE.prompt + 1n * PRICE.completion;
const STREAM_COST = 3n * PRICE.prompt + 3n * PRICE.completion;

const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-soak-'));
  const upstream = spawnNode([path.join(ROOT, 'bench', 'zero-upstream.mjs')], {
    env: { ...process.env, ZERO_FAIL_RATE: FAULTS ? '0.05' : '0', ZERO_BREAK_RATE: FAULTS ? '0.05' : '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const upstreamUrl = `http://127.0.0.1:${await lineMatching(upstream)}/v1`;
  const configPath = path.join(dir, 'config.json');
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      providers: [
        { id: 'zero-a', kind: 'openai', base_url: upstreamUrl, timeout_ms: 5000 },
        { id: 'zero-b', kind: 'openai', base_url: upstreamUrl, timeout_ms: 5000 },
      ],
      models: [
        {
          id: 'soak/echo',
          name: 'soak/echo',
          category: 'text',
          status: 'available',
          pricing: { prompt: '0.000001', completion: '0.000002' },
          context_length: 4096,
          max_output_tokens: 64,
          endpoints: [
            { provider: 'zero-a', model: 'echo' },
            { provider: 'zero-b', model: 'echo' },
          ],
        },
      ],
    }),
  );
  const adminToken = `soak-${crypto.randomBytes(8).toString('hex')}`;
  const dataDir = path.join(dir, 'data');
  const gw = await startEmbedded({ configPath, adminToken, dataDir, logLevel: 'warn' });
  const pid = gw.pids[0];
  const messages = [{ role: 'user', content: 'ping' }];
  const spec = (seconds: number, rate: number): SoakLoadSpec => ({
    url: `${gw.base}/v1/chat/completions`,
    headers: gw.headers,
    bodies: [
      JSON.stringify({ model: 'soak/echo', messages, max_tokens: 16 }),
      JSON.stringify({ model: 'soak/echo', messages, max_tokens: 16, stream: true }),
    ],
    connections: CONNECTIONS,
    seconds,
    rate,
  });

  let rate = Number(process.env.SOAK_RATE ?? 0);
  if (!rate) {
    await runJsonChild<SoakLoadResult>('soak-load.ts', spec(3, 0)); // warm-up
    const peak = await runJsonChild<SoakLoadResult>('soak-load.ts', spec(10, 0));
    rate = Math.max(1, Math.round(peak.rps * SHARE));
    process.stdout.write(
      `peak ${Math.round(peak.rps)} requests/s (half streamed); soaking at ${rate}/s for ${MINUTES} min after ${WARMUP_MINUTES} of warm-up\n`,
    );
  }

  // The soak's own account: the ledger checks below then count its calls only, not the peak run's.
  const admin = (p: string, body: unknown) =>
    fetch(`${gw.base}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<{ data: Record<string, string> }>);
  const soakAccount = (await admin('/admin/v1/accounts', { credits: 1_000_000, rate_limit: { requests: 1_000_000_000, interval: '60s' } })).data
    .account_id;
  const soakKey = (await admin(`/admin/v1/accounts/${soakAccount}/keys`, { label: 'soak' })).data.key;

  type Sample = { minute: number; mib: number };
  const rss: Sample[] = [];
  // The JS heap in use beside RSS: a backlog or a leak of objects grows it. What V8 has committed for the heap (shown
  // in the progress lines) grows RSS alone: V8 sizes the old generation from what is live (docs/benchmarks.md,
  // "2026-11-27, later morning"); PGlite's WebAssembly memory is set at start.
  const heap: Sample[] = [];
  const metricsUrl = `http://127.0.0.1:${Number(new URL(gw.base).port) + 1000}/metrics`;
  const mibOf = (metrics: string, name: string) => {
    const m = new RegExp(`^${name} (\\d+)`, 'm').exec(metrics);
    return m ? Number(m[1]) / 2 ** 20 : undefined;
  };
  const measuredFrom = Date.now() + WARMUP_MINUTES * 60_000;
  const beforeWarmUp = rssMiB(pid);
  const sampler = setInterval(async () => {
    const minute = (Date.now() - measuredFrom) / 60_000;
    if (minute < 0) return;
    rss.push({ minute, mib: rssMiB(pid) });
    const metrics = await fetch(metricsUrl)
      .then((r) => r.text())
      .catch(() => '');
    const used = mibOf(metrics, 'nodejs_heap_size_used_bytes');
    if (used !== undefined) heap.push({ minute, mib: used });
    if (rss.length % 6 === 0) {
      const committed = mibOf(metrics, 'nodejs_heap_size_total_bytes');
      process.stdout.write(
        `  ${minute.toFixed(1)} min: RSS ${rss.at(-1)!.mib.toFixed(0)} MiB, JS heap used ${used?.toFixed(0) ?? '?'} of ${committed?.toFixed(0) ?? '?'} MiB\n`,
      );
    }
  }, 10_000);
  const load = await runJsonChild<SoakLoadResult>('soak-load.ts', {
    ...spec((WARMUP_MINUTES + MINUTES) * 60, rate),
    headers: { authorization: `Bearer ${soakKey}` },
  });
  clearInterval(sampler);
  await new Promise((r) => setTimeout(r, 2_000)); // the last settles cross the bus
  await gw.stop();
  upstream.kill('SIGTERM');

  const db = await openServiceDb('billing', billingMigrations, { dataDir });
  const q = <T>(sql: string) => db.query<T & Record<string, unknown>>(sql);
  const problems: string[] = [];
  const accounts = await q<{ id: string; held: string; open: string; usage: string; charges: string; recorded: string; available: string }>(`
    SELECT a.id, a.held::text AS held, a.total_usage::text AS usage, (a.total_credits - a.total_usage - a.held)::text AS available,
      COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id AND h.state = 'open'), 0)::text AS open,
      COALESCE((SELECT sum(charge) FROM holds h WHERE h.account_id = a.id), 0)::text AS charges,
      COALESCE((SELECT sum(total_cost) FROM usage_records u WHERE u.account_id = a.id), 0)::text AS recorded
    FROM accounts a`);
  for (const a of accounts) {
    if (a.held !== a.open) problems.push(`${a.id}: held ${a.held}, open holds ${a.open}`);
    if (a.usage !== a.charges || a.usage !== a.recorded) problems.push(`${a.id}: usage ${a.usage}, charges ${a.charges}, records ${a.recorded}`);
    if (BigInt(a.available) < 0n) problems.push(`${a.id}: available ${a.available}`);
  }
  const [{ open }] = await q<{ open: number }>(`SELECT count(*)::int AS open FROM holds WHERE state = 'open'`);
  if (open > 0) problems.push(`${open} holds still open`);
  const records = await q<{ status: string; streamed: boolean; cost: string; n: number }>(
    `SELECT status, streamed, total_cost::text AS cost, count(*)::int AS n FROM usage_records WHERE account_id = '${soakAccount}'
     GROUP BY 1, 2, 3 ORDER BY 4 DESC`,
  );
  for (const r of records) {
    const exact = r.streamed ? STREAM_COST : CALL_COST;
    if (r.status === 'succeeded' && BigInt(r.cost) !== exact)
      problems.push(`${r.n} succeeded ${r.streamed ? 'streamed ' : ''}calls charged ${r.cost}, not ${exact}`);
    if (r.status !== 'succeeded' && BigInt(r.cost) > exact) problems.push(`${r.n} ${r.status} calls charged ${r.cost}, above a whole call`);
  }
  const charged = records.filter((r) => r.status === 'succeeded').reduce((n, r) => n + r.n, 0);
  await db.close();

  const firstMinute = (xs: Sample[]) => xs.filter((s) => s.minute <= 1.01);
  const lastMinute = (xs: Sample[]) => xs.filter((s) => s.minute >= MINUTES - 1);
  const avg = (xs: Sample[]) => xs.reduce((n, s) => n + s.mib, 0) / Math.max(1, xs.length);
  const growth = avg(lastMinute(rss)) / avg(firstMinute(rss)) - 1;
  const range = (xs: Sample[]) => {
    const after = xs.filter((s) => s.minute > 1.01).map((s) => s.mib);
    return after.length ? `${Math.min(...after).toFixed(0)}-${Math.max(...after).toFixed(0)} MiB` : '–';
  };
  const ok2xx = load.byStatus['200'] ?? 0;
  const rssMax = Math.max(...rss.map((s) => s.mib));
  const overLimit = RSS_LIMIT_MIB > 0 && rssMax > RSS_LIMIT_MIB;
  process.stdout.write(
    [
      '',
      `| soak | ${MINUTES} min at ${rate} requests/s after ${WARMUP_MINUTES} of warm-up (counted in the answers), ${CONNECTIONS} connections, half streamed${FAULTS ? ', 5 % upstream failures and 5 % broken streams' : ''} |`,
      '|---|---|',
      `| requests | ${load.requests} (${Math.round(load.rps)}/s) |`,
      `| answers by status | ${Object.entries(load.byStatus)
        .map(([s, n]) => `${s}: ${n}`)
        .join(', ')} |`,
      `| connection errors and timeouts | ${load.errors} |`,
      `| RSS, first minute → last minute | ${avg(firstMinute(rss)).toFixed(0)} → ${avg(lastMinute(rss)).toFixed(0)} MiB (${(growth * 100).toFixed(1)} %); after the first minute ${range(rss)}; ${beforeWarmUp.toFixed(0)} MiB before the warm-up |`,
      `| RSS, highest sample of the measured minutes | ${rssMax.toFixed(0)} MiB${RSS_LIMIT_MIB > 0 ? ` (limit ${RSS_LIMIT_MIB}: ${overLimit ? 'over, failed' : 'within'})` : ''} |`,
      `| JS heap used, first minute → last minute | ${avg(firstMinute(heap)).toFixed(0)} → ${avg(lastMinute(heap)).toFixed(0)} MiB; after the first minute ${range(heap)} |`,
      `| usage records | ${records.map((r) => `${r.n} ${r.status}${r.streamed ? ' streamed' : ''} at ${r.cost}`).join('; ')} |`,
      `| ledger after | ${problems.length === 0 ? `balanced: no hold open, every succeeded call charged exactly (${charged} of ${ok2xx} answers 200)` : problems.join('; ')} |`,
      '',
    ].join('\n'),
  );
  fs.rmSync(dir, { recursive: true, force: true });
  const failed = problems.length > 0 || load.errors > 0 || (!FAULTS && ok2xx !== load.requests) || growth > 0.1 || overLimit;
  if (failed) process.exitCode = 1;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    process.stderr.write(`soak failed: ${(e as Error).stack}\n`);
    killAllChildren();
    process.exit(1);
  },
);
