import http from 'node:http';
import type { AddressInfo } from 'node:net';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFleet, type Fleet } from 'model-gateway/local-fleet';
import { PG_URL, expectLedgerInvariants, fleetLedger, onFleetPorts, settled } from './support/harness';

interface Span {
  traceId: string;
  name: string;
  service: string;
  /** The instrumentation that made it (its scope), e.g. @opentelemetry/instrumentation-pg. */
  scope: string;
}

/** A stand-in OTLP/HTTP collector: keeps every span the services export, with the service that sent it. */
async function startCollector() {
  const spans: Span[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      try {
        const body = JSON.parse(raw);
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '';
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) spans.push({ traceId: s.traceId, name: s.name, service, scope: ss.scope?.name ?? '' });
        }
      } catch {
        /* protobuf or garbage: not ours */
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { spans, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('traces in the fleet', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let fleet: Fleet;

  beforeAll(async () => {
    collector = await startCollector();
    const db = new URL(PG_URL);
    db.pathname = `/gw_trace_${crypto.randomBytes(5).toString('hex')}`;
    fleet = await onFleetPorts((port) =>
      startFleet({
        port,
        databaseUrl: db.toString(),
        adminToken: `trace-admin-${crypto.randomBytes(8).toString('hex')}`,
        dropDatabaseOnStop: true,
        logDir: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-trace-')),
        env: {
          LOG_LEVEL: 'warn',
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        },
      }),
    );
  }, 90_000);
  afterAll(async () => {
    await fleet?.stop();
    await collector?.close();
  });

  it('follows one chat completion from the edge through text and billing, across the bus', async () => {
    const admin = (p: string, body: unknown) =>
      fetch(`${fleet.url}${p}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fleet.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json());
    const acct = await admin('/admin/v1/accounts', { credits: 1 });
    const key = (await admin(`/admin/v1/accounts/${acct.data.account_id}/keys`, {})).data.key;
    const r = await fetch(`${fleet.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/chat-small', messages: [{ role: 'user', content: 'trace me' }] }),
    });
    expect(r.status).toBe(200);

    const deadline = Date.now() + 15_000;
    let services = new Set<string>();
    let consumed = false;
    while (Date.now() < deadline) {
      const edgeChat = collector.spans.find(
        (s) =>
          s.service === 'model-gateway-edge' &&
          /POST/.test(s.name) &&
          collector.spans.some((t) => t.traceId === s.traceId && t.service === 'model-gateway-text'),
      );
      if (edgeChat) {
        const inTrace = collector.spans.filter((s) => s.traceId === edgeChat.traceId);
        services = new Set(inTrace.map((s) => s.service));
        consumed = inTrace.some((s) => s.service === 'model-gateway-billing' && s.name === 'billing.holds process');
        if (services.has('model-gateway-billing') && consumed) break;
      }
      await new Promise((res) => setTimeout(res, 200));
    }
    expect([...services]).toEqual(expect.arrayContaining(['model-gateway-billing', 'model-gateway-edge', 'model-gateway-text']));
    // Billing's usage event continues the trace too: its consumers (the catalogue's stats, the jobs' costs) may join it.
    const followers = ['model-gateway-catalogue', 'model-gateway-jobs'];
    expect([...services].filter((s) => !['model-gateway-billing', 'model-gateway-edge', 'model-gateway-text', ...followers].includes(s))).toEqual([]);
    expect(consumed).toBe(true); // the settle event's consumer span continues the request's trace
    // The fleet runs bundles (scripts/build.js), and the libraries OpenTelemetry patches by require hooks stay outside
    // them: billing's PostgreSQL and Redis calls are traced as under tsx. A bundled pg or ioredis would lose these.
    const billingScopes = new Set(collector.spans.filter((s) => s.service === 'model-gateway-billing').map((s) => s.scope));
    for (const scope of ['@opentelemetry/instrumentation-pg', '@opentelemetry/instrumentation-ioredis'])
      expect({ scope, traced: billingScopes.has(scope) }).toEqual({ scope, traced: true });

    // Tracing changes nothing in the money: the call settled and the ledger's invariants hold.
    const ledger = fleetLedger(fleet.databaseUrl);
    try {
      await settled(ledger);
      await expectLedgerInvariants(ledger);
      expect(await ledger.ledger(`SELECT state FROM holds`)).toEqual([{ state: 'settled' }]);
    } finally {
      await ledger.close();
    }
  }, 30_000);
});
