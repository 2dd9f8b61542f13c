/**
 * Test support only: one member of a Kafka consumer group in a process of its own, so a test can kill it with
 * SIGKILL as a crashed replica dies (no leave, no commit). Prints `joined` once subscribed and `handled <event id>`
 * per event, and handles each in `KAFKA_MEMBER_HANDLE_MS` (a replica that is busy when it dies).
 *
 *   KAFKA_BROKERS=... KAFKA_MEMBER_GROUP=g KAFKA_MEMBER_TOPIC=t node --import tsx libs/bus/src/testing/kafka-member.ts
 */
import { createKafkaBus } from '../kafka';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`kafka-member: ${name} is required`);
  return v;
};

async function main() {
  const bus = createKafkaBus(env('KAFKA_BROKERS').split(','), { fetchMaxWaitMs: 200, createTopics: false });
  const handleMs = Number(process.env.KAFKA_MEMBER_HANDLE_MS ?? 0);
  await bus.subscribe(
    env('KAFKA_MEMBER_GROUP'),
    [env('KAFKA_MEMBER_TOPIC')],
    async (event) => {
      if (handleMs) await new Promise((r) => setTimeout(r, handleMs));
      process.stdout.write(`handled ${event.id}\n`);
    },
    { claimIdleMs: 6_000 },
  );
  process.stdout.write('joined\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`kafka-member: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
