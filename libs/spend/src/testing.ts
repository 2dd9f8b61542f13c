/**
 * Fakes for the money flow's unit tests (never imported by product code): an in-memory billing that places holds
 * and reads the hold-close events off the real memory bus as billing's consumer would, a recording logger, and a
 * fixture that wires them into SpendDeps. The fake text upstream is @gateway/upstreams/testing's fakeTextProtocol.
 */
import type { BillingPort, HoldRequest } from '@gateway/billing-client';
import { createMemoryBus, type EventBus } from '@gateway/bus';
import { buildRegistry, parseConfig, type ModelConfig, type ModelRegistry } from '@gateway/config';
import { EVENT_TYPES, TOPICS, holdCheckpointSchema, holdCloseSchema, type HoldCheckpoint, type HoldClose } from '@gateway/events';
import type { Logger, RequestContext } from '@gateway/service-kit';
import { Circuits } from './circuits';
import type { SpendDeps } from './paid-call';

let seq = 0;
const next = () => ++seq;

/** A request as the edge hands it over. */
export function testContext(overrides: Partial<RequestContext> = {}): RequestContext {
  const n = next();
  return { requestId: `req_test${n}`, accountId: 'acct_test', keyId: 'key_test', startedAt: Date.now(), ...overrides };
}

export interface TestModel {
  id: string;
  /** `<provider>/<upstream model>`, which is also the endpoint's circuit key. */
  endpoints: string[];
  category?: ModelConfig['category'];
  /** USD per token, as in the config file. */
  prompt?: string;
  completion?: string;
  request?: string;
  /** USD per input character (speech) and per second of audio (transcription). */
  character?: string;
  second?: string;
  maxOutputTokens?: number;
}

/** A registry through the real config schema, so the models are what production would resolve. */
function testRegistry(models: TestModel[]): ModelRegistry {
  const split = (e: string) => ({ provider: e.slice(0, e.indexOf('/')), model: e.slice(e.indexOf('/') + 1) });
  const providers = [...new Set(models.flatMap((m) => m.endpoints.map((e) => split(e).provider)))];
  return buildRegistry(
    parseConfig({
      providers: providers.map((id) => ({ id, kind: 'simulated' })),
      models: models.map((m) => ({
        id: m.id,
        name: m.id,
        category: m.category ?? 'text',
        status: 'available',
        context_length: 8192,
        max_output_tokens: m.maxOutputTokens ?? 100,
        pricing: {
          prompt: m.prompt ?? '0.000001',
          completion: m.completion ?? '0.000002',
          ...(m.request ? { request: m.request } : {}),
          ...(m.character ? { character: m.character } : {}),
          ...(m.second ? { second: m.second } : {}),
        },
        endpoints: m.endpoints.map(split),
      })),
    }),
  );
}

export interface FakeBilling {
  port: BillingPort;
  /** Every hold placed, in order. */
  requests: HoldRequest[];
  /** Every hold-close event billing's consumer received, in order, each already accepted by the real schema. */
  closes: HoldClose[];
  /** Every hold checkpoint received, in order, each accepted by the real schema. */
  checkpoints: HoldCheckpoint[];
  /** The types of the hold events received, in order (closes and checkpoints interleaved as they arrived). */
  arrivals: string[];
  /** Holds placed that no close event has reached (the sweeper would release them at expiry). */
  open(): string[];
  /** Resolves once every event published so far on the placed holds' keys has reached the consumer. */
  delivered(): Promise<void>;
}

const FLUSH = 'test.flush';

/** Billing as the money flow sees it: holds placed through the port, closes read off the bus by a 'billing' group. */
async function fakeBilling(bus: EventBus): Promise<FakeBilling> {
  const requests: HoldRequest[] = [];
  const holdIds: string[] = [];
  const closes: HoldClose[] = [];
  const checkpoints: HoldCheckpoint[] = [];
  const arrivals: string[] = [];
  const malformed: unknown[] = [];
  const flushed = new Map<string, () => void>();

  await bus.subscribe('billing', [TOPICS.holds], async (event) => {
    if (event.type === FLUSH) return void flushed.get(event.id)?.();
    if (event.type === EVENT_TYPES.holdCheckpoint) {
      const checkpoint = holdCheckpointSchema.safeParse(event.data);
      if (!checkpoint.success) return void malformed.push(event.data);
      checkpoints.push(checkpoint.data);
      return void arrivals.push(event.type);
    }
    if (event.type !== EVENT_TYPES.holdClose) return; // as billing's consumer: a hold it never hears of stays open
    arrivals.push(event.type);
    const parsed = holdCloseSchema.safeParse(event.data);
    if (parsed.success) closes.push(parsed.data);
    else malformed.push(event.data);
  });

  return {
    port: {
      async verifyKey() {
        throw new Error('fake billing: verifyKey is not part of the money flow');
      },
      async placeHold(req) {
        requests.push(req);
        const holdId = `hold_test${next()}`;
        holdIds.push(holdId);
        return { holdId, amountNano: req.amountNano, expiresAt: new Date(Date.now() + req.ttlMs).toISOString() };
      },
      async ping() {},
    },
    requests,
    closes,
    checkpoints,
    arrivals,
    open: () => holdIds.filter((id) => !closes.some((c) => c.hold_id === id)),
    async delivered() {
      // A close handed over after the answer (settleAfterAnswer) is published on the next turn of the event loop.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // The memory bus delivers one key's events in publish order, so a marker on each hold's key arriving means
      // everything published before it on that key has arrived too: no sleeping, no guessing.
      await Promise.all(
        holdIds.map(
          (key) =>
            new Promise<void>((resolve, reject) => {
              const id = `${FLUSH}:${next()}`;
              flushed.set(id, resolve);
              bus.publish(TOPICS.holds, { id, type: FLUSH, key, data: null }).catch(reject);
            }),
        ),
      );
      if (malformed.length) throw new Error(`billing's consumer would reject: ${JSON.stringify(malformed)}`);
    },
  };
}

/** The same bus, except that every publish fails, as a broker outage would. */
export function failingPublish(bus: EventBus): EventBus {
  return {
    ...bus,
    publish: async () => {
      throw new Error('broker unreachable');
    },
  };
}

export interface LogLine {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps its lines for assertions; only the pino calls the money flow makes are implemented. */
export function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (a: unknown, b?: unknown) => {
    lines.push(typeof a === 'string' ? { level, msg: a, fields: {} } : { level, msg: String(b ?? ''), fields: (a ?? {}) as Record<string, unknown> });
  };
  const logger = {
    level: 'trace',
    fatal: at('fatal'),
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    child: () => logger,
  };
  return logger as unknown as Logger;
}

export interface SpendFixture {
  deps: SpendDeps;
  bus: EventBus;
  billing: FakeBilling;
  circuits: Circuits;
  log: LogLine[];
  /** Closes the bus, delivering what is queued first. */
  close(): Promise<void>;
}

/**
 * Everything PaidCall needs, in memory. Circuits open on the first failure, so a test that expects none opened
 * would see the one a stray failure opened.
 */
export async function spendFixture(models: TestModel[]): Promise<SpendFixture> {
  const bus = createMemoryBus();
  const billing = await fakeBilling(bus);
  const circuits = new Circuits(1, 60_000);
  const log: LogLine[] = [];
  const deps: SpendDeps = { registry: testRegistry(models), billing: billing.port, bus, circuits, logger: recordingLogger(log) };
  return { deps, bus, billing, circuits, log, close: () => bus.close() };
}
