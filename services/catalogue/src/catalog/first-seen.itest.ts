import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { migrations } from '../migrations';
import { recordFirstSeen } from './first-seen';

/** PostgreSQL (fleet, shared by every replica) and PGlite (embedded, kept in the data directory). */
describeOnEngines('model first-seen dates', (engine) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb(engine, 'catalogue', migrations);
  }, 60_000);
  afterAll(() => t?.close());

  const at = (iso: string) => new Date(iso);

  it('a model keeps the date it first appeared: a restart, or another replica starting later, never moves it', async () => {
    const first = await recordFirstSeen(t.db, ['a/one', 'a/two'], at('2026-01-01T10:00:00Z'));
    expect(Object.fromEntries(first)).toEqual({ 'a/one': '2026-01-01T10:00:00.000Z', 'a/two': '2026-01-01T10:00:00.000Z' });
    // The next start, with one model added and one gone.
    const next = await recordFirstSeen(t.db, ['a/one', 'a/three'], at('2026-02-01T10:00:00Z'));
    expect(Object.fromEntries(next)).toEqual({ 'a/one': '2026-01-01T10:00:00.000Z', 'a/three': '2026-02-01T10:00:00.000Z' });
    // The model that left comes back with its first date.
    expect((await recordFirstSeen(t.db, ['a/two'], at('2026-03-01T10:00:00Z'))).get('a/two')).toBe('2026-01-01T10:00:00.000Z');
  });

  it('replicas starting together agree on one date per model', async () => {
    const ids = ['r/x', 'r/y'];
    const answers = await Promise.all(
      ['2026-04-01T00:00:01Z', '2026-04-01T00:00:02Z', '2026-04-01T00:00:03Z'].map((t0) => recordFirstSeen(t.db, ids, at(t0))),
    );
    const dates = answers.map((m) => JSON.stringify(Object.fromEntries(m)));
    expect(new Set(dates).size).toBe(1);
    expect(answers[0].get('r/x')).toMatch(/^2026-04-01T00:00:0[123]\.000Z$/);
  });

  it('a catalogue larger than one insert batch is recorded whole', async () => {
    const ids = Array.from({ length: 1_203 }, (_, i) => `big/m${i}`);
    const seen = await recordFirstSeen(t.db, ids, at('2026-05-01T00:00:00Z'));
    expect(seen.size).toBe(1_203);
  });
});
