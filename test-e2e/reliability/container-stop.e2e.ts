import fs from 'node:fs';
import { serviceCommand } from '@gateway/topology';
import { waitFor, REPO_ROOT as ROOT } from '@gateway/testing';
import { PG_URL, expectLedgerInvariants, settled } from '../support/harness';
import { textCost } from '../support/money';
import { type ChatOutcome as Outcome, chatOnce } from './support/chat-load';
import { TEXT_PRICE } from '../support/config';
import { type FaultFleet, type GatedUpstream, gatedConfig, startFaultFleet, startGatedUpstream } from './support/private-engines';

/**
 * Issue 34, defects 2 and 3: a service stopped the way the kubelet stops its container. The process runs exactly the
 * container's command (libs/topology's serviceCommand, which the Dockerfile, the chart and k8s/ are held to by
 * libs/config/src/deploy-commands.test.ts), and gets one SIGTERM on its own pid, under load, with DRAIN_TIMEOUT_MS
 * set as the chart sets it from the grace period. Under the tsx CLI the service was SIGKILLed by tsx 60 ms later
 * whenever its event loop was busy; with a fixed 25 s drain the last settles ran after the kubelet's SIGKILL.
 * Every answered call must be settled, and the stream the drain had to cut charged what it delivered.
 */

/** Every call of the gated upstream: 3 prompt and 1 completion tokens at the e2e catalogue's price. */
const PER_CALL = textCost(TEXT_PRICE, 3, 1);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
/** What the chart would set for a 14 s grace period and a 5 s preStop: text cuts what is still open after 4 s. */
const DRAIN_TIMEOUT_MS = 9_000;

describe("a fleet in the kubelet's hands: probes during an outage, a stop under load", () => {
  let upstream: GatedUpstream;
  let f: FaultFleet;

  beforeAll(async () => {
    upstream = await startGatedUpstream();
    f = await startFaultFleet(
      gatedConfig(upstream.url, ['ok', 'gated', 'drip']),
      { postgresUrl: PG_URL, redisUrl: REDIS_URL },
      {
        DRAIN_TIMEOUT_MS: String(DRAIN_TIMEOUT_MS),
        LOG_LEVEL: 'info',
      },
    );
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
    await upstream?.close();
  });

  const chat = (key: string, model: string, stream = false, onBody?: (soFar: string) => void) => chatOnce(f.url, key, model, { stream, onBody });

  /**
   * Defect 7: readiness says whether this pod can serve, never whether a shared dependency answers. Billing down
   * once marked every edge pod NotReady, and the ingress answered 503 even for the keyless catalogue.
   */
  it('billing down: edge and text stay ready, keyless routes answer, keyed calls get the retryable 503 envelope, and /healthz and /metrics show the outage', async () => {
    const acct = await f.account(5);
    const metrics = f.fleet.metricsUrls;
    const health = async (name: string) => (await (await fetch(`${metrics[name]}/healthz`)).json()) as { dependencies: Record<string, string> };
    await waitFor(async () => (await health('edge')).dependencies.billing === 'ok', "edge's first check of billing", 30_000);
    await f.kill('billing');

    for (const name of ['edge', 'text']) {
      const ready = await fetch(`${metrics[name]}/readyz`);
      expect({ name, status: ready.status }).toEqual({ name, status: 200 });
    }
    const models = await fetch(`${f.url}/v1/models`);
    expect(models.status).toBe(200);
    const keyed = await chat(acct.key, 'test/ok');
    expect({ status: keyed.status, code: JSON.parse(keyed.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    // The background checks (every 10 s) find the outage; the probes' status codes never depend on them.
    await waitFor(async () => (await health('edge')).dependencies.billing.startsWith('down'), 'edge to see billing down', 30_000);
    await waitFor(async () => (await health('text')).dependencies.billing.startsWith('down'), 'text to see billing down', 30_000);
    expect(await (await fetch(`${metrics.edge}/metrics`)).text()).toContain('gateway_dependency_up{dependency="billing"} 0');
    expect((await fetch(`${metrics.edge}/readyz`)).status).toBe(200);

    await f.fleet.restart('billing');
    await waitFor(async () => (await health('edge')).dependencies.billing === 'ok', 'edge to see billing back', 30_000);
    expect((await chat(acct.key, 'test/ok')).status).toBe(200);
    await settled(f, acct.accountId, 30_000);
  }, 120_000);

  it('text, running the container command, gets SIGTERM on its pid under load: it drains within DRAIN_TIMEOUT_MS, exits 0, and every answered call is settled', async () => {
    const text = f.fleet.processes.text;
    // The process is node itself running the container's argv (only the binary's path differs): no tsx CLI parent.
    const argv = fs.readFileSync(`/proc/${text.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(argv).toEqual([process.execPath, ...serviceCommand('text').slice(1)]);
    expect(fs.readlinkSync(`/proc/${text.pid}/cwd`)).toBe(ROOT);

    const acct = await f.account(50);
    const results: Outcome[] = [];
    upstream.shut();
    // In flight when SIGTERM arrives: calls the upstream answers during the drain, and a stream that outlasts it.
    const gated = Array.from({ length: 3 }, () => chat(acct.key, 'test/gated').then((o) => (results.push(o), o)));
    let dripped = '';
    const drip = chat(acct.key, 'test/drip', true, (soFar) => {
      dripped = soFar;
    }).then((o) => (results.push(o), o));
    await waitFor(async () => upstream.waiting('gated') === 3 && dripped.includes(' po'), 'the gated calls and the stream to be in flight', 30_000);

    // Load: calls answered at once, so text's event loop is busy and settles stream onto the bus when SIGTERM comes.
    let loading = true;
    const loaders = Array.from({ length: 6 }, async () => {
      while (loading) {
        const o = await chat(acct.key, 'test/ok');
        results.push(o);
        if (o.status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
    });
    await waitFor(async () => results.filter((o) => o.status === 200).length >= 40, 'text to be under load', 60_000);

    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      text.once('exit', (code, signal) => r({ code, signal })),
    );
    // The kubelet signals the container's first process only, never a process group.
    text.kill('SIGTERM');
    // Answered during the drain: the connections text already holds are served to the end.
    upstream.open('gated');
    for (const o of await Promise.all(gated)) expect({ status: o.status, broken: o.broken }).toEqual({ status: 200, broken: false });
    // Drained, not killed: exit 0 is runMain's, after the drain and the bus's close.
    expect(await exited).toEqual({ code: 0, signal: null });
    // Within the setting: the drain ran on DRAIN_TIMEOUT_MS, cutting what was open 5 s before it (3 s for the holds,
    // 2 s for closing the bus and pools), and finished.
    const log = f.log('text');
    expect(log).toContain(`"graceMs":${DRAIN_TIMEOUT_MS},"cutAfterMs":${DRAIN_TIMEOUT_MS - 5_000},"msg":"draining"`);
    expect(log).toMatch(/"msg":"drain deadline: cutting the connections still open"[\s\S]*"msg":"drained"/);
    // The stream outlasted the drain: cut at its deadline, after it had delivered.
    const cut = await drip;
    expect({ status: cut.status, broken: cut.broken }).toEqual({ status: 200, broken: true });
    loading = false;
    await Promise.all(loaders);

    // Every hold text placed is closed: nothing is left to expire uncharged at its TTL, 15 minutes on.
    await settled(f, acct.accountId, 30_000);
    const ok = results.filter((o) => o.status === 200 && !o.broken);
    const holds = await f.ledger<{ request_id: string; state: string; charge: string }>(
      `SELECT request_id, state, charge::text AS charge FROM holds WHERE account_id = $1`,
      [acct.accountId],
    );
    const byRequest = new Map(holds.map((h) => [h.request_id, h]));
    for (const o of ok)
      expect({ id: o.requestId, ...byRequest.get(o.requestId!) }).toMatchObject({ id: o.requestId, state: 'settled', charge: PER_CALL.toString() });
    // The cut stream is charged what it delivered (the prompt and the tokens sent), not released free.
    expect(BigInt(byRequest.get(cut.requestId!)!.charge)).toBeGreaterThan(0n);
    // Calls that reached no text (it had stopped listening) are refused with the retryable envelope, never charged.
    for (const o of results.filter((r) => r.status !== 200)) {
      expect({ status: o.status, code: JSON.parse(o.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    }
    process.stdout.write(
      `container stop: ${results.length} calls, ${ok.length} answered whole and settled, 1 stream cut and charged ${byRequest.get(cut.requestId!)!.charge}, ` +
        `${results.length - ok.length - 1} refused 503 after the listener closed\n`,
    );
    await expectLedgerInvariants(f);
  }, 180_000);
});
