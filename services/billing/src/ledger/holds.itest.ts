import type { GatewayError } from '@gateway/errors';
import { type Engine, describeOnEngines } from '@gateway/db/testing';
import { useLedgerDb } from '../testing/ledger-db';
import { closeEvent, payer, placeHold } from '../testing/ledger-fixtures';
import { expectLedgerInvariants, figures } from '../testing/ledger-figures';

/**
 * Placing and settling holds, on both engines the SQL ledger runs on (real PostgreSQL, PGlite) and on the embedded
 * gateway's in-memory ledger over PGlite: the same rules must give the same answers and the same tables.
 */
describeOnEngines('ledger holds', (engine) => holdsBehave(engine));
describe('ledger holds on the in-memory ledger', () => holdsBehave('memory'));

function holdsBehave(engine: Engine | 'memory'): void {
  const t = useLedgerDb(engine);
  afterEach(() => expectLedgerInvariants(t.db));

  it('50 concurrent holds never overspend the balance', async () => {
    const a = await payer(t.db, '1');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => placeHold(t.ledger, a, '0.3')));
    const placed = results.filter((r) => r.status === 'fulfilled').length;
    expect(placed).toBe(3);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as GatewayError).code).toBe('insufficient_credits');
    expect((await figures(t.db, a)).account).toEqual({ usage: '0', held: '900000000', available: '100000000' });
  });

  it("50 concurrent holds never overspend a key's cap", async () => {
    const a = await payer(t.db, '100', '1');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => placeHold(t.ledger, a, '0.25')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    const { account, key } = await figures(t.db, a);
    expect(key.held).toBe('1000000000');
    expect(account.held).toBe('1000000000'); // refused key holds left nothing on the account
  });

  it('a busy key: 60 holds placed at once, then settled at once with every settle delivered twice, each charged once', async () => {
    const a = await payer(t.db, '10');
    const holds = await Promise.all(Array.from({ length: 60 }, () => placeHold(t.ledger, a, '0.1')));
    expect(new Set(holds.map((h) => h.holdId)).size).toBe(60);
    // Batched per key on PostgreSQL: a batch may hold both copies of one settle, and the second must be a no-op.
    const closes = holds.flatMap((h, i) => {
      const ev = closeEvent(h, a, 'settle', i % 2 ? '0.05' : '0.01');
      return [ev, ev];
    });
    const results = await Promise.all(closes.map((ev) => t.ledger.closeHold(ev)));
    expect(results.filter((r) => r.result === 'settled')).toHaveLength(60);
    expect(results.filter((r) => r.result === 'noop')).toHaveLength(60);
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '1800000000', held: '0', available: '8200000000' },
      key: { usage: '1800000000', held: '0' },
    });
  });

  it('settles once: a redelivered settle changes nothing', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.5');
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.2'))).toEqual({ result: 'settled', charged: 200_000_000n });
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.2'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect(await t.ledger.closeHold(closeEvent(h, a, 'release', '0'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '200000000', held: '0', available: '800000000' },
      key: { usage: '200000000', held: '0' },
    });
  });

  it('caps a charge above the hold at the hold', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.1');
    expect((await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.7'))).charged).toBe(100_000_000n);
  });

  it('lets exactly one of many concurrent requests with one Idempotency-Key through', async () => {
    const a = await payer(t.db, '10');
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => placeHold(t.ledger, a, '0.1', { idempotencyKey: 'same' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as GatewayError).code).toBe('duplicate_request');
    expect((await figures(t.db, a)).account.held).toBe('100000000');
  });

  it('returns the same hold for the same request id (a retried internal call holds once)', async () => {
    const a = await payer(t.db, '1');
    const h1 = await placeHold(t.ledger, a, '0.4', { requestId: 'req_same' });
    const h2 = await placeHold(t.ledger, a, '0.4', { requestId: 'req_same' });
    expect(h2.holdId).toBe(h1.holdId);
    expect((await figures(t.db, a)).account.held).toBe('400000000');
  });

  // No foreign key stands behind holds and usage records (docs/decisions/009): the functions must refuse these.
  it('writes no hold for an account or key that does not exist, or a key of another account, alone or in a batch', async () => {
    const a = await payer(t.db, '1');
    const b = await payer(t.db, '1');
    const strangers = [
      { ...a, accountId: 'acct_none' },
      { ...a, keyId: 'key_none' },
      { ...a, keyId: b.keyId },
    ];
    for (const who of strangers) {
      await expect(placeHold(t.ledger, who, '0.1', { requestId: 'req_stranger_alone' })).rejects.toBeDefined();
      const batch = await Promise.allSettled(
        Array.from({ length: 5 }, (_, i) => placeHold(t.ledger, who, '0.1', { requestId: `req_stranger_${i}` })),
      );
      expect(batch.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
    }
    expect(await t.db.query(`SELECT id FROM holds WHERE request_id LIKE 'req_stranger%'`)).toEqual([]);
    expect(await figures(t.db, a)).toEqual(await figures(t.db, b));
  });

  it('refuses a suspended account, naming it', async () => {
    const a = await payer(t.db, '1');
    await t.db.query('UPDATE accounts SET suspended = true WHERE id = $1', [a.accountId]);
    await expect(placeHold(t.ledger, a, '0.1')).rejects.toMatchObject({ code: 'insufficient_credits', message: expect.stringMatching(/suspended/) });
  });

  // The in-memory ledger writes its tables behind it with every row as a JSON array read by position
  // (batch-wire.ts): a field in the wrong place would still be a valid row, so each one here is distinct.
  it('keeps every field of a close in its usage record and hold row, as given', async () => {
    const a = await payer(t.db, '10');
    const settled = await placeHold(t.ledger, a, '0.5', { idempotencyKey: 'idem-fields', model: 'vendor/fields' });
    const fields = {
      model: 'vendor/fields',
      streamed: true,
      finish_reason: 'length',
      tokens_prompt: 11,
      tokens_completion: 12,
      native_tokens_prompt: 13,
      native_tokens_completion: 14,
      num_media_prompt: 15,
      num_media_completion: 16,
      latency: 17,
      generation_time: 18,
      attempts: 19,
      fallback_used: true,
      origin: 'https://app.example',
      usage_estimated: true,
    };
    await t.ledger.closeHold(closeEvent(settled, a, 'settle', '0.25', fields));
    const released = await placeHold(t.ledger, a, '0.5');
    const release = closeEvent(released, a, 'release', '0');
    await t.ledger.closeHold(release);

    const usage = await t.db.query(
      `SELECT request_id, hold_id, account_id, key_id, model, streamed, status, error_code, finish_reason, tokens_prompt,
              tokens_completion, native_tokens_prompt, native_tokens_completion, num_media_prompt, num_media_completion,
              latency, generation_time, attempts, fallback_used, origin, usage_estimated, total_cost::text AS total_cost
         FROM usage_records WHERE account_id = $1 ORDER BY total_cost DESC`,
      [a.accountId],
    );
    const who = { account_id: a.accountId, key_id: a.keyId };
    expect(usage).toEqual([
      { request_id: settled.requestId, hold_id: settled.holdId, ...who, ...fields, status: 'succeeded', error_code: null, total_cost: '250000000' },
      { ...withoutFinishedAt(release.record), request_id: released.requestId, hold_id: released.holdId, ...who, total_cost: '0' },
    ]);
    const holds = await t.db.query(
      `SELECT id, request_id, key_id, idempotency_key, model, amount::text AS amount, state, charge::text AS charge,
              closed_at IS NOT NULL AS closed, expires_at > created_at AS expires_later
         FROM holds WHERE account_id = $1 ORDER BY charge DESC`,
      [a.accountId],
    );
    const hold = { key_id: a.keyId, amount: '500000000', closed: true, expires_later: true };
    expect(holds).toEqual([
      {
        ...hold,
        id: settled.holdId,
        request_id: settled.requestId,
        idempotency_key: 'idem-fields',
        model: 'vendor/fields',
        state: 'settled',
        charge: '250000000',
      },
      { ...hold, id: released.holdId, request_id: released.requestId, idempotency_key: null, model: 'm/x', state: 'released', charge: '0' },
    ]);
  });
}

/** A usage record as its table keeps it: when it finished is the event's, not a column. */
function withoutFinishedAt<T extends { finished_at: string }>(record: T): Omit<T, 'finished_at'> {
  const { finished_at: _finishedAt, ...kept } = record;
  return kept;
}
