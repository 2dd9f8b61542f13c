/**
 * A single-node Apache Kafka broker (KRaft: broker and controller in one JVM) for `pnpm fleet` and the test suite.
 * Its jars come from Maven Central through deploy/kafka/pom.xml; nothing is downloaded from anywhere else. The broker
 * keeps its log under `dataDir`, so a restart finds its topics, offsets and committed groups again.
 *
 *   node --import tsx deploy/kafka/broker.ts start [--data DIR] [--port 9092]   prints KAFKA_BROKERS=127.0.0.1:9092
 *   … start --ssl-port 9094   adds a TLS listener; also prints KAFKA_SSL_BROKERS=127.0.0.1:9094 and KAFKA_SSL_CA_FILE=…
 *   node --import tsx deploy/kafka/broker.ts stop  [--data DIR]
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const HERE = __dirname;
const POM = path.join(HERE, 'pom.xml');
const CLASSPATH_FILE = path.join(HERE, 'target', 'classpath.txt');
export const DEFAULT_KAFKA_DATA_DIR = path.resolve(HERE, '..', '..', '.gateway-kafka-data');
export const DEFAULT_KAFKA_PORT = 9092;

export interface BrokerOptions {
  dataDir?: string;
  port?: number;
  /** JVM heap ceiling; a single-node broker for development and CI needs little. */
  heap?: string;
  /** How long to wait for the broker to accept connections (the first start formats storage and warms the JVM). */
  startTimeoutMs?: number;
  /**
   * A second listener, SASL_PLAINTEXT on this port, accepting this user with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
   * (the SCRAM credentials are written when storage is first formatted), so the client's SASL settings meet a real
   * broker in the tests. Give the same on every start of one data directory.
   */
  sasl?: { port: number; username: string; password: string };
  /**
   * A TLS listener (SSL) on this port, with a self-signed certificate for localhost and 127.0.0.1 that Java's
   * keytool makes in the data directory at the first start with it; clients trust it through `caFile`.
   */
  ssl?: { port: number };
}

export interface RunningBroker {
  brokers: string;
  pid: number;
  /** True when this call started the JVM; false when a broker from an earlier start was already serving the port. */
  started: boolean;
  /** With the `ssl` option: the TLS listener's address, and the certificate a client trusts it by (KAFKA_SSL_CA_FILE). */
  ssl?: { brokers: string; caFile: string };
  stop(): Promise<void>;
}

/**
 * The runtime classpath, resolved by Maven once and then read from target/classpath.txt. The first resolution
 * downloads about 60 MB into ~/.m2 and takes a minute or two on a cold cache; later ones take no network at all.
 */
export function kafkaClasspath(): string {
  const stale =
    !fs.existsSync(CLASSPATH_FILE) ||
    fs.statSync(CLASSPATH_FILE).mtimeMs < fs.statSync(POM).mtimeMs ||
    fs
      .readFileSync(CLASSPATH_FILE, 'utf8')
      .trim()
      .split(path.delimiter)
      .some((jar) => !fs.existsSync(jar));
  if (stale) {
    process.stderr.write('kafka: resolving the broker jars from Maven Central (the first time takes a minute or two)\n');
    // Maven's output goes to stderr: stdout carries only what the caller reads (KAFKA_BROKERS=…), and Maven writes
    // colour resets there even with -q.
    execFileSync('mvn', ['-q', '-B', '-f', POM, 'dependency:build-classpath', `-Dmdep.outputFile=${CLASSPATH_FILE}`], {
      stdio: ['ignore', process.stderr, 'inherit'],
    });
  }
  return fs.readFileSync(CLASSPATH_FILE, 'utf8').trim();
}

const saslProperties = (sasl: NonNullable<BrokerOptions['sasl']>): string[] => [
  'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
  `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${sasl.username}="${sasl.password}";`,
  'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
  'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
];

/**
 * The keystore's password. It guards nothing the directory's permissions do not: it sits in server.properties,
 * beside the keystore, as it would in any broker's configuration.
 */
const KEYSTORE_PASSWORD = 'gateway-dev-broker';

/** The TLS listener's key and self-signed certificate, made once per data directory with keytool (part of Java). */
function ensureKeystore(dataDir: string): { keystore: string; caFile: string } {
  const keystore = path.join(dataDir, 'tls', 'broker.p12');
  const caFile = path.join(dataDir, 'tls', 'ca.pem');
  if (fs.existsSync(keystore) && fs.existsSync(caFile)) return { keystore, caFile };
  fs.mkdirSync(path.dirname(keystore), { recursive: true });
  fs.rmSync(keystore, { force: true });
  const store = ['-keystore', keystore, '-storetype', 'PKCS12', '-storepass', KEYSTORE_PASSWORD];
  const quiet = { stdio: ['ignore', 'ignore', 'inherit'] as ('ignore' | 'inherit')[] };
  execFileSync(
    'keytool',
    ['-genkeypair', '-alias', 'broker', '-keyalg', 'RSA', '-keysize', '2048', '-validity', '36500', '-dname', 'CN=localhost'].concat([
      '-ext',
      'SAN=dns:localhost,ip:127.0.0.1',
      '-keypass',
      KEYSTORE_PASSWORD,
      ...store,
    ]),
    quiet,
  );
  execFileSync('keytool', ['-exportcert', '-alias', 'broker', '-rfc', '-file', caFile, ...store], quiet);
  return { keystore, caFile };
}

const sslProperties = (keystore: string): string[] => [
  'ssl.keystore.type=PKCS12',
  `ssl.keystore.location=${keystore}`,
  `ssl.keystore.password=${KEYSTORE_PASSWORD}`,
  `ssl.key.password=${KEYSTORE_PASSWORD}`,
];

interface Listeners {
  sasl?: BrokerOptions['sasl'];
  ssl?: { port: number; keystore: string };
}

const serverProperties = (dataDir: string, port: number, { sasl, ssl }: Listeners): string => {
  const extra = [...(sasl ? [{ name: 'SASL_PLAINTEXT', port: sasl.port }] : []), ...(ssl ? [{ name: 'SSL', port: ssl.port }] : [])];
  const listed = extra.map((l) => `,${l.name}://127.0.0.1:${l.port}`).join('');
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${port + 1}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 1}${listed}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}${listed}`,
    'controller.listener.names=CONTROLLER',
    `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${extra.map((l) => `,${l.name}:${l.name}`).join('')}`,
    ...(sasl ? saslProperties(sasl) : []),
    ...(ssl ? sslProperties(ssl.keystore) : []),
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${path.join(dataDir, 'log')}`,
    // One node: every internal topic has one replica, and a consumer group forms without the 3 s initial delay.
    'offsets.topic.replication.factor=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    // The gateway creates its topics itself, with the partitions its settings ask for; a typo must not make a topic.
    'auto.create.topics.enable=false',
    'num.partitions=3',
    'log.retention.hours=168',
  ].join('\n');
};

const java = (classpath: string, heap: string, args: string[]) => [
  `-Xmx${heap}`,
  '-Xms64m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  `-Dlog4j.configuration=file:${path.join(HERE, 'log4j.properties')}`,
  '-cp',
  classpath,
  ...args,
];

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Whether a process with this pid still runs (signal 0 only checks). */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Starts the broker unless one already serves the port from the same data directory; resolves once it accepts clients. */
export async function ensureKafkaBroker(opts: BrokerOptions = {}): Promise<RunningBroker> {
  const dataDir = path.resolve(opts.dataDir ?? DEFAULT_KAFKA_DATA_DIR);
  const port = opts.port ?? DEFAULT_KAFKA_PORT;
  const pidFile = path.join(dataDir, 'broker.pid');
  const brokers = `127.0.0.1:${port}`;
  const previous = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : 0;
  const tls = opts.ssl ? ensureKeystore(dataDir) : undefined;
  const ssl = opts.ssl && tls ? { brokers: `127.0.0.1:${opts.ssl.port}`, caFile: tls.caFile } : undefined;
  if (previous && processAlive(previous) && (await portOpen(port)))
    return { brokers, pid: previous, started: false, ...(ssl ? { ssl } : {}), stop: () => stopPid(previous, pidFile) };
  if (await portOpen(port)) throw new Error(`kafka: 127.0.0.1:${port} is taken by another process; set KAFKA_BROKERS to use it, or free the port`);

  fs.mkdirSync(dataDir, { recursive: true });
  const classpath = kafkaClasspath();
  const heap = opts.heap ?? '384m';
  const config = path.join(dataDir, 'server.properties');
  const listeners = { sasl: opts.sasl, ...(opts.ssl && tls ? { ssl: { port: opts.ssl.port, keystore: tls.keystore } } : {}) };
  fs.writeFileSync(config, `${serverProperties(dataDir, port, listeners)}\n`);
  if (!fs.existsSync(path.join(dataDir, 'log', 'meta.properties'))) {
    const { sasl } = opts;
    const scram = sasl
      ? ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((m) => ['--add-scram', `${m}=[name=${sasl.username},password=${sasl.password}]`])
      : [];
    execFileSync(
      'java',
      java(classpath, heap, ['kafka.tools.StorageTool', 'format', '-t', randomUUID().replaceAll('-', '').slice(0, 22), '-c', config, ...scram]),
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
  }
  const log = fs.openSync(path.join(dataDir, 'broker.log'), 'a');
  const child = spawn('java', java(classpath, heap, ['kafka.Kafka', config]), { detached: true, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  child.unref();
  const pid = child.pid ?? 0;
  fs.writeFileSync(pidFile, String(pid));

  const deadline = Date.now() + (opts.startTimeoutMs ?? 120_000);
  while (!(await portOpen(port))) {
    if (!processAlive(pid)) throw new Error(`kafka: the broker exited during start; see ${path.join(dataDir, 'broker.log')}`);
    if (Date.now() > deadline) {
      await stopPid(pid, pidFile);
      throw new Error(`kafka: the broker did not listen on ${brokers} in time; see ${path.join(dataDir, 'broker.log')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { brokers, pid, started: true, ...(ssl ? { ssl } : {}), stop: () => stopPid(pid, pidFile) };
}

/** SIGTERM lets the broker close its log cleanly; a broker that has not gone after 30 s is killed. */
async function stopPid(pid: number, pidFile: string): Promise<void> {
  if (!processAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  fs.rmSync(pidFile, { force: true });
}

export async function stopKafkaBroker(dataDir = DEFAULT_KAFKA_DATA_DIR): Promise<void> {
  const pidFile = path.join(path.resolve(dataDir), 'broker.pid');
  if (!fs.existsSync(pidFile)) return;
  await stopPid(Number(fs.readFileSync(pidFile, 'utf8')), pidFile);
}

if (require.main === module) {
  const [command = 'start', ...rest] = process.argv.slice(2);
  const flag = (name: string) => {
    const i = rest.indexOf(`--${name}`);
    return i >= 0 ? rest[i + 1] : undefined;
  };
  const dataDir = flag('data') ?? DEFAULT_KAFKA_DATA_DIR;
  const port = flag('port') ? Number(flag('port')) : undefined;
  const sslPort = flag('ssl-port') ? Number(flag('ssl-port')) : undefined;
  const main = async () => {
    if (command === 'stop') return stopKafkaBroker(dataDir);
    if (command !== 'start') throw new Error(`usage: broker.ts start|stop [--data DIR] [--port N] [--ssl-port N] (got ${command})`);
    const broker = await ensureKafkaBroker({ dataDir, port, ...(sslPort ? { ssl: { port: sslPort } } : {}) });
    process.stdout.write(`KAFKA_BROKERS=${broker.brokers}\n`);
    if (broker.ssl) process.stdout.write(`KAFKA_SSL_BROKERS=${broker.ssl.brokers}\nKAFKA_SSL_CA_FILE=${broker.ssl.caFile}\n`);
  };
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
