import type { KafkaAdmin, KafkaClient } from './kafka-client';
import { topicsToCreate, type CreateTopics } from './kafka-codec';

/**
 * The topics this process uses, created before their first use with the installation's partitions and replication:
 * the brokers' auto-creation (off on deploy/kafka's broker, and on any cluster that should be run carefully) would
 * give a misspelt topic a life of its own, with whatever defaults the brokers have. Each name is looked up once per
 * process; a failed lookup or creation is tried again on the next use.
 */
export class KafkaTopics {
  private adminReady?: Promise<KafkaAdmin>;
  private admin?: KafkaAdmin;
  private readonly known = new Map<string, Promise<void>>();
  private readonly present = new Set<string>();

  constructor(
    private readonly kafka: Pick<KafkaClient, 'admin'>,
    private readonly settings: CreateTopics | false,
  ) {}

  /** Resolves once every named topic exists (at once when topics are the operator's to create). */
  async ensure(names: string[]): Promise<void> {
    if (this.settings === false) return;
    const missing = [...new Set(names.filter((n) => !this.known.has(n)))];
    if (missing.length) {
      const creating = this.create(missing).then(() => {
        for (const n of missing) this.present.add(n);
      });
      for (const n of missing) this.known.set(n, creating);
      creating.catch(() => {
        for (const n of missing) if (this.known.get(n) === creating) this.known.delete(n);
      });
    }
    await Promise.all(names.map((n) => this.known.get(n)));
  }

  /** Whether the topic is known to exist (or is the operator's), so a publish need not wait for a lookup. */
  exists(name: string): boolean {
    return this.settings === false || this.present.has(name);
  }

  async describeCluster(): Promise<void> {
    await (await this.connect()).describeCluster();
  }

  async close(): Promise<void> {
    await this.admin?.disconnect();
  }

  private async create(names: string[]): Promise<void> {
    const admin = await this.connect();
    const existing = new Set(await admin.listTopics());
    const absent = names.filter((n) => !existing.has(n));
    // Another process may create one between the two calls; kafkajs answers that case with false, not an error.
    if (absent.length && this.settings) await admin.createTopics({ waitForLeaders: true, topics: topicsToCreate(absent, this.settings) });
  }

  private connect(): Promise<KafkaAdmin> {
    this.adminReady ??= (async () => {
      this.admin = this.kafka.admin();
      await this.admin.connect();
      return this.admin;
    })().catch((err) => {
      this.adminReady = undefined;
      throw err;
    });
    return this.adminReady;
  }
}
