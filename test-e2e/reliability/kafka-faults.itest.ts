import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ensureKafkaBroker, processAlive, type RunningBroker } from 'model-gateway/kafka-broker';
import { type BusEvent, type EventBus, type KafkaBusOptions, busOptionsFromEnv, createKafkaBus, kafkaOptionsFromEnv, openBus } from '@gateway/bus';
import { runEntry, type RunningProcess, KAFKA, TLS_CERT_PATH, waitFor } from '@gateway/testing';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { groupMembersOn } from './support/bus-view';

/**
 * Faults on a Kafka broker of the suite's own (deploy/kafka's, started here with its own data directory and port),
 * so it can be killed: the broker killed with SIGKILL mid-traffic and restarted, a group member killed while another
 * holds the other partitions, a group far behind, and one key failing while the others flow. Every handler here is
 * idempotent by event id, as the gateway's consumers are: what counts is that each acknowledged event is applied,
 * and how often it was delivered more than once. The figures go to the log and docs/reliability.md.
 */
const RUN = randomUUID().slice(0, 8);
let seq = 0;
const unique = (what: string) => `${what}-${RUN}-${++seq}`;
const event = (key: string, n: number): BusEvent<{ key: string; n: number }> => ({ id: unique('evt'), type: 'test.v1', key, data: { key, n } });
const figures = (what: string, f: Record<string, number | string>) => process.stderr.write(`kafka faults: ${what}: ${JSON.stringify(f)}\n`);

/** The partition the adapter's producer puts a key on (kafkajs's Java-compatible partitioner). */
function partitionOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 1 }) as PartitionMetadata);
  return Partitioners.DefaultPartitioner()({ topic: 't', partitionMetadata, message: { key, value: '' } });
}

/** A port whose next one is free too (the broker's controller listens there). */
async function freePortPair(): Promise<number> {
  const listen = (port: number) =>
    new Promise<net.Server | undefined>((resolve) => {
      const s = net.createServer().once('error', () => resolve(undefined));
      s.listen(port, '127.0.0.1', () => resolve(s));
    });
  for (;;) {
    const first = await listen(0);
    if (!first) continue;
    const port = (first.address() as net.AddressInfo).port;
    const second = port < 65535 ? await listen(port + 1) : undefined;
    await Promise.all([first, second].map((s) => new Promise((r) => (s ? s.close(r) : r(undefined)))));
    if (second) return port;
  }
}

/** Deliveries per event id: an idempotent consumer applies the first, and ignores the others. */
class Applied {
  readonly deliveries = new Map<string, number>();
  add(id: string): void {
    this.deliveries.set(id, (this.deliveries.get(id) ?? 0) + 1);
  }
  has(id: string): boolean {
    return this.deliveries.has(id);
  }
  get size(): number {
    return this.deliveries.size;
  }
  get redelivered(): number {
    return [...this.deliveries.values()].reduce((a, n) => a + n - 1, 0);
  }
}

KAFKA.describe('kafka faults on a broker of the suite’s own', () => {
  // Made in beforeAll: a describe's body also runs when the suite is skipped, and its afterAll then never does.
  let dataDir = '';
  let port = 0;
  const sasl = { port: 0, username: 'gateway', password: `pw-${RUN}` };
  const ssl = { port: 0 };
  /** Started, or started again on the same data: a restart keeps the listeners, the SCRAM users and the certificate. */
  const start = () => ensureKafkaBroker({ dataDir, port, heap: '256m', sasl, ssl });
  let broker: RunningBroker | undefined;
  const open: EventBus[] = [];
  const members: RunningProcess[] = [];
  const brokers = () => [`127.0.0.1:${port}`];
  const bus = (o: KafkaBusOptions = {}) => {
    const b = createKafkaBus(brokers(), {
      fromBeginning: true,
      retryBaseMs: 10,
      retryCapMs: 50,
      fetchMaxWaitMs: 200,
      onError: () => undefined,
      ...o,
    });
    open.push(b);
    return b;
  };

  /** The member ids of the consumer group the bus made for `group` (kafkaGroupId: the group, a colon, its topics). */
  const groupMembers = async (group: string): Promise<string[]> => {
    const groups = Object.values(await groupMembersOn(brokers().join(','), `${group}:`));
    expect(groups).toHaveLength(1);
    return groups[0];
  };

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafka-faults-'));
    port = await freePortPair();
    sasl.port = await freePortPair();
    ssl.port = await freePortPair();
    broker = await start();
  }, 180_000);

  afterEach(async () => {
    for (const m of members.splice(0)) m.child.kill('SIGKILL');
    await Promise.all(open.splice(0).map((b) => b.close()));
  });

  afterAll(async () => {
    await broker?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('loses no acknowledged event when the broker is killed with SIGKILL mid-traffic and restarted', async () => {
    const b = bus({ createTopics: { numPartitions: 3 } });
    const topic = unique('holds');
    const applied = new Applied();
    await b.subscribe(unique('billing'), [topic], async (e) => applied.add(e.id), { claimIdleMs: 6_000 });

    // The publisher retries a publish that failed, with the same event, as the gateway's hold closer does.
    const acknowledged: string[] = [];
    let failedPublishes = 0;
    let restarted = false;
    let afterRestart = 0;
    const publishing = (async () => {
      for (let n = 0; !restarted || afterRestart < 100; n++) {
        const e = event(`acct-${n % 20}`, n);
        for (;;) {
          try {
            await b.publish(topic, e);
            break;
          } catch {
            failedPublishes++;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        acknowledged.push(e.id);
        if (restarted) afterRestart++;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();

    await waitFor(() => applied.size >= 100, '100 events applied before the kill', 20_000);
    const killed = broker!.pid;
    process.kill(killed, 'SIGKILL');
    await waitFor(() => !processAlive(killed), 'the broker to die', 10_000);
    const beforeRestart = acknowledged.length;
    const down = Date.now();
    broker = await start();
    const restartMs = Date.now() - down;
    restarted = true;
    await publishing;

    await waitFor(() => acknowledged.every((id) => applied.has(id)), 'every acknowledged event applied', 60_000);
    await waitFor(
      () =>
        b.ping().then(
          () => true,
          () => false,
        ),
      'the consumer back in its group, so ready',
      30_000,
    );
    expect(applied.size).toBe(acknowledged.length);
    figures('broker SIGKILL', { acknowledged: acknowledged.length, beforeRestart, failedPublishes, redelivered: applied.redelivered, restartMs });
  }, 150_000);

  it('keeps a consumer alive (its process ready) while the broker is down and kafkajs restarts it, only its dependency down', async () => {
    const crashes: string[] = [];
    const b = bus({
      createTopics: { numPartitions: 1 },
      // Quick retries, so kafkajs gives up on a fetch and restarts the consumer within seconds of the broker's death.
      kafka: { retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 2 } },
      onError: (err, ctx) => void (ctx.group && ctx.action === 'none' && crashes.push(String(err))),
    });
    const topic = unique('holds');
    const group = unique('billing');
    const applied = new Applied();
    await b.subscribe(group, [topic], async (e) => applied.add(e.id));
    const first = event('acct-1', 1);
    await b.publish(topic, first);
    await waitFor(() => applied.has(first.id), 'the first event', 20_000);
    expect(() => b.checkConsumers()).not.toThrow();
    const member = await groupMembers(group);
    expect(member).toHaveLength(1);

    const killed = broker!.pid;
    process.kill(killed, 'SIGKILL');
    await waitFor(() => !processAlive(killed), 'the broker to die', 10_000);
    // Crashed, restarted by kafkajs, crashed again: the consumer is out of its group through the outage.
    await waitFor(() => crashes.length >= 2, 'kafkajs to crash and restart the consumer', 60_000);
    await expect(b.ping()).rejects.toThrow();
    expect(() => b.checkConsumers()).not.toThrow();

    broker = await start();
    const second = event('acct-1', 2);
    await waitFor(
      () =>
        b.publish(topic, second).then(
          () => true,
          () => false,
        ),
      'a publish after the restart',
      30_000,
    );
    await waitFor(() => applied.has(second.id), 'the consumer back, consuming', 60_000);
    await b.ping();
    expect(() => b.checkConsumers()).not.toThrow();
    // Each restart happened with the broker dead, so the consumer never left its group: it rejoined as the member it
    // was (kafkajs patched: patches/kafkajs@2.2.4.patch), and the coordinator had no old member to wait out first.
    expect(await groupMembers(group)).toEqual(member);
    figures('consumer through a broker outage', { crashes: crashes.length });
  }, 150_000);

  it('hands a killed member’s partitions to the member that holds the others, losing none of its events', async () => {
    const b = bus({ createTopics: { numPartitions: 4 } });
    const topic = unique('holds');
    const group = unique('billing');
    // Creates the topic (the child process leaves topics alone) and is the member that survives.
    const applied = new Applied();
    const bySurvivor = new Set<string>();
    await b.subscribe(
      group,
      [topic],
      async (e) => {
        applied.add(e.id);
        bySurvivor.add(e.id);
      },
      { claimIdleMs: 6_000 },
    );
    const victim = runEntry('libs/bus/src/testing/kafka-member.ts', {
      KAFKA_BROKERS: brokers().join(','),
      KAFKA_MEMBER_GROUP: group,
      KAFKA_MEMBER_TOPIC: topic,
      KAFKA_MEMBER_HANDLE_MS: '20',
    });
    members.push(victim);
    const byVictim = () => new Set([...victim.output().matchAll(/^handled (\S+)$/gm)].map((m) => m[1]));
    await waitFor(() => /^joined$/m.test(victim.output()), 'the second member to join', 60_000);

    const sent = Array.from({ length: 400 }, (_, i) => event(`acct-${i % 40}`, i));
    await Promise.all(sent.map((e) => b.publish(topic, e)));
    await waitFor(() => byVictim().size >= 20 && bySurvivor.size > 0, 'both members to handle events', 30_000);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const victimHandled = byVictim();
    for (const id of victimHandled) applied.add(id);
    const victimKeys = new Set(sent.filter((e) => victimHandled.has(e.id)).map((e) => e.key));
    const survivorBefore = new Set(bySurvivor);

    await waitFor(() => sent.every((e) => applied.has(e.id)), 'every event applied by one member or the other', 60_000);
    expect(applied.size).toBe(sent.length);
    // A key lives on one partition: the survivor handling a key of the victim's after the kill took that partition over.
    const takenOver = sent.filter((e) => victimKeys.has(e.key) && bySurvivor.has(e.id) && !survivorBefore.has(e.id)).length;
    expect(takenOver).toBeGreaterThan(0);
    figures('member SIGKILL', {
      events: sent.length,
      byVictim: victimHandled.size,
      survivorBeforeKill: survivorBefore.size,
      takenOver,
      redelivered: applied.redelivered,
    });
  }, 120_000);

  it('catches up a group 5000 events behind, losing none', async () => {
    const b = bus({ createTopics: { numPartitions: 3 } });
    const topic = unique('usage');
    const group = unique('jobs');
    const applied = new Applied();
    const first = event('acct-0', -1);
    const sub = await b.subscribe(group, [topic], async (e) => applied.add(e.id));
    await b.publish(topic, first);
    await waitFor(() => applied.has(first.id), 'the group to commit its first event', 20_000);
    await sub.close();

    const sent = Array.from({ length: 5_000 }, (_, i) => event(`acct-${i % 500}`, i));
    const published = Date.now();
    for (let i = 0; i < sent.length; i += 1_000) await Promise.all(sent.slice(i, i + 1_000).map((e) => b.publish(topic, e)));
    const publishMs = Date.now() - published;
    const resumed = Date.now();
    await b.subscribe(group, [topic], async (e) => applied.add(e.id));
    await waitFor(() => applied.size === sent.length + 1, 'the group to catch up', 90_000);
    const catchUpMs = Date.now() - resumed;
    expect(sent.every((e) => applied.has(e.id))).toBe(true);
    figures('lagging group', { behind: sent.length, publishMs, catchUpMs, redelivered: applied.redelivered });
  }, 150_000);

  it('lets the other keys flow while one key fails, then applies that key’s events in order', async () => {
    const b = bus({ createTopics: { numPartitions: 3 }, maxAttempts: 1_000 });
    const topic = unique('holds');
    const others = Array.from({ length: 200 }, (_, i) => event(`acct-${i % 20}`, i));
    const bad = Array.from({ length: 5 }, (_, i) => event('acct-bad', i));
    // Keys on the failing key's partition wait behind it, as their order requires; the other partitions' must not.
    const stalled = partitionOf('acct-bad', 3);
    const free = others.filter((e) => partitionOf(e.key, 3) !== stalled);
    let storageBack = false;
    let failures = 0;
    const order: Record<string, number[]> = {};
    const applied = new Applied();
    await b.subscribe(unique('billing'), [topic], async (e) => {
      const { key, n } = e.data as { key: string; n: number };
      if (key === 'acct-bad' && !storageBack) {
        failures++;
        throw new Error('this account’s rows are locked');
      }
      (order[key] ??= []).push(n);
      applied.add(e.id);
    });
    for (let i = 0; i < others.length; i++) {
      if (i % 40 === 0) await b.publish(topic, bad[i / 40]);
      await b.publish(topic, others[i]);
    }

    // Flipped only once the free partitions' events are applied: were they stuck behind the failing key, this never ends.
    await waitFor(() => free.every((e) => applied.has(e.id)), 'the other partitions to flow', 30_000);
    const appliedWhileFailing = applied.size;
    storageBack = true;
    await waitFor(() => applied.size === others.length + bad.length, 'everything once the key recovers', 30_000);
    expect(order['acct-bad']).toEqual([0, 1, 2, 3, 4]);
    for (const [key, ns] of Object.entries(order)) expect([key, ns]).toEqual([key, [...ns].sort((x, y) => x - y)]);
    expect(free.length).toBeGreaterThan(0);
    expect(failures).toBeGreaterThan(0);
    figures('one key failing', { events: others.length + bad.length, appliedWhileFailing, failures, redelivered: applied.redelivered });
  }, 60_000);

  // The client settings as a service builds them from KAFKA_SASL_*, against the broker's SASL_PLAINTEXT listener.
  it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)(
    'authenticates with SASL %s from the environment',
    async (mechanism) => {
      const settings = kafkaOptionsFromEnv({
        KAFKA_SASL_MECHANISM: mechanism,
        KAFKA_SASL_USERNAME: sasl.username,
        KAFKA_SASL_PASSWORD: sasl.password,
      });
      const b = createKafkaBus([`127.0.0.1:${sasl.port}`], { ...settings, fromBeginning: true, fetchMaxWaitMs: 200, onError: () => undefined });
      open.push(b);
      const topic = unique('holds');
      const got: string[] = [];
      await b.subscribe(unique('billing'), [topic], async (e) => void got.push(e.id));
      const e = event('acct-1', 1);
      await b.publish(topic, e);
      await waitFor(() => got.length === 1, 'the event through the SASL listener', 20_000);
      expect(got).toEqual([e.id]);
    },
    30_000,
  );

  it('is refused with a wrong SASL password, and says so', async () => {
    const settings = kafkaOptionsFromEnv({ KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: sasl.username, KAFKA_SASL_PASSWORD: 'wrong' });
    const b = createKafkaBus([`127.0.0.1:${sasl.port}`], settings);
    open.push(b);
    await expect(b.ping()).rejects.toThrow(/SASL SCRAM SHA512 authentication failed/);
  }, 30_000);

  // The client settings as a service builds them from KAFKA_SSL and KAFKA_SSL_CA_FILE, against the broker's SSL listener.
  it('publishes and consumes over TLS, trusting the broker by the CA file from the environment', async () => {
    const tls = broker!.ssl!;
    const b = openBus(busOptionsFromEnv({ BUS: 'kafka', KAFKA_BROKERS: tls.brokers, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: tls.caFile }));
    open.push(b);
    const topic = unique('holds');
    const got: string[] = [];
    await b.subscribe(unique('billing'), [topic], async (e) => void got.push(e.id), { fromBeginning: true });
    const e = event('acct-1', 1);
    await b.publish(topic, e);
    await waitFor(() => got.length === 1, 'the event through the TLS listener', 20_000);
    expect(got).toEqual([e.id]);
    await b.ping();
  }, 30_000);

  it('is refused over TLS with a CA that did not sign the broker’s certificate, and names the setting', async () => {
    const tls = broker!.ssl!;
    // A real certificate, and trusted by this process for HTTPS (NODE_EXTRA_CA_CERTS): only not the broker's signer.
    const settings = busOptionsFromEnv({ BUS: 'kafka', KAFKA_BROKERS: tls.brokers, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: TLS_CERT_PATH });
    const b = openBus({
      ...settings,
      kafka: { ...settings.kafka, kafka: { ...settings.kafka?.kafka, retry: { retries: 1 } } },
      onError: () => undefined,
    });
    open.push(b);
    await expect(b.ping()).rejects.toThrow(
      /^bus: the kafka brokers' TLS certificate is not trusted \(.*self-signed certificate.*\); KAFKA_SSL_CA_FILE must hold the CA that signed it$/,
    );
    await expect(b.subscribe(unique('billing'), [unique('holds')], async () => undefined)).rejects.toThrow(/KAFKA_SSL_CA_FILE must hold the CA/);
  }, 60_000);
});
