import crypto from 'node:crypto';
import { Client } from 'pg';
import { openServiceDb, type Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { HoldClose } from '@gateway/events';
import { parseUsd } from '@gateway/money';
import { migrations } from '../migrations';
import { createAccount } from './accounts';
import { createKey } from './keys';
import { createLedger, expireHolds, type Ledger } from './holds';

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The ledger's rules on both engines it runs on: real PostgreSQL (fleet) and PGlite (embedded). */
describe.each(['postgres', 'pglite'] as const)('ledger holds on %s', (engine) => {
  let db: Db;
  let ledger: Ledger;
  let dbName: string | undefined;

  beforeAll(async () => {
    if (engine === 'postgres') {
      dbName = `gw_ledger_${crypto.randomBytes(5).toString('hex')}`;
      const c = new Client({ connectionString: PG });
      await c.connect(); // under CI a missing server fails here, loudly
      await c.query(`CREATE DATABASE ${dbName}`);
      await c.end();
      const url = new URL(PG);
      url.pathname = `/${dbName}`;
      db = await openServiceDb('billing', migrations, { databaseUrl: url.toString(), poolSize: 20 });
    } else {
      db = await openServiceDb('billing', migrations, {});
    }
    ledger = createLedger(db);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
    if (dbName) {
      const c = new Client({ connectionString: PG });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await c.end();
    }
  });

  async function fresh(credits: string, keyLimit?: string) {
    const accountId = await createAccount(db, parseUsd(credits), {});
    const { key_id } = await createKey(db, accountId, { limitNano: keyLimit ? parseUsd(keyLimit) : null });
    return { accountId, keyId: key_id };
  }

  const hold = (a: { accountId: string; keyId: string }, amount: string, extra: Partial<Parameters<Ledger['placeHold']>[0]> = {}) =>
    ledger.placeHold({ ...a, requestId: `req_${crypto.randomBytes(8).toString('hex')}`, amountNano: parseUsd(amount), model: 'm/x', ttlMs: 60_000, ...extra });

  const record = { model: 'm/x', streamed: false, status: 'succeeded' as const, error_code: null, finish_reason: 'stop', tokens_prompt: 1, tokens_completion: 1,
    native_tokens_prompt: 1, native_tokens_completion: 1, num_media_prompt: 0, num_media_completion: 0, latency: 1, generation_time: 2, attempts: 1,
    fallback_used: false, origin: '', finished_at: new Date().toISOString() };
  const close = (h: { holdId: string }, a: { accountId: string }, outcome: 'settle' | 'release', charge: string): HoldClose =>
    ({ hold_id: h.holdId, account_id: a.accountId, request_id: 'x', outcome, charge_nano: parseUsd(charge).toString(), record });

  async function balance(accountId: string) {
    const [r] = await db.query<any>('SELECT total_usage::text AS usage, held::text AS held, (total_credits - total_usage - held)::text AS available FROM accounts WHERE id = $1', [accountId]);
    return r;
  }

  it('50 concurrent holds never overspend the balance', async () => {
    const a = await fresh('1');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => hold(a, '0.3')));
    const placed = results.filter((r) => r.status === 'fulfilled').length;
    expect(placed).toBe(3);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as GatewayError).code).toBe('insufficient_credits');
    expect(await balance(a.accountId)).toEqual({ usage: '0', held: '900000000', available: '100000000' });
  });

  it("50 concurrent holds never overspend a key's cap", async () => {
    const a = await fresh('100', '1');
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => hold(a, '0.25')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    const [k] = await db.query<any>('SELECT held::text AS held FROM api_keys WHERE id = $1', [a.keyId]);
    expect(k.held).toBe('1000000000');
    expect((await balance(a.accountId)).held).toBe('1000000000'); // refused key holds left nothing on the account
  });

  it('settles once: a redelivered settle changes nothing', async () => {
    const a = await fresh('1');
    const h = await hold(a, '0.5');
    expect(await ledger.closeHold(close(h, a, 'settle', '0.2'))).toEqual({ result: 'settled', charged: 200_000_000n });
    expect(await ledger.closeHold(close(h, a, 'settle', '0.2'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect(await ledger.closeHold(close(h, a, 'release', '0'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect(await balance(a.accountId)).toEqual({ usage: '200000000', held: '0', available: '800000000' });
  });

  it('caps a charge above the hold at the hold', async () => {
    const a = await fresh('1');
    const h = await hold(a, '0.1');
    expect((await ledger.closeHold(close(h, a, 'settle', '0.7'))).charged).toBe(100_000_000n);
  });

  it('releases an expired hold, and a late settle is charged only while it fits', async () => {
    const a = await fresh('1');
    const h = await hold(a, '0.6', { ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    expect(await expireHolds(db)).toBeGreaterThanOrEqual(1);
    expect(await balance(a.accountId)).toEqual({ usage: '0', held: '0', available: '1000000000' });
    const other = await hold(a, '0.9');
    // 0.1 left available: a late charge of 0.3 does not fit and is dropped, visibly
    expect(await ledger.closeHold(close(h, a, 'settle', '0.3'))).toEqual({ result: 'late_dropped', charged: 0n });
    expect(await ledger.closeHold(close(other, a, 'release', '0'))).toMatchObject({ result: 'released' });
    const h2 = await hold(a, '0.2', { ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    await expireHolds(db);
    expect(await ledger.closeHold(close(h2, a, 'settle', '0.15'))).toEqual({ result: 'late_charged', charged: 150_000_000n });
    expect(await balance(a.accountId)).toEqual({ usage: '150000000', held: '0', available: '850000000' });
  });

  it('lets exactly one of many concurrent requests with one Idempotency-Key through', async () => {
    const a = await fresh('10');
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => hold(a, '0.1', { idempotencyKey: 'same' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as GatewayError).code).toBe('duplicate_request');
    expect((await balance(a.accountId)).held).toBe('100000000');
  });

  it('returns the same hold for the same request id (a retried internal call holds once)', async () => {
    const a = await fresh('1');
    const h1 = await hold(a, '0.4', { requestId: 'req_same' });
    const h2 = await hold(a, '0.4', { requestId: 'req_same' });
    expect(h2.holdId).toBe(h1.holdId);
    expect((await balance(a.accountId)).held).toBe('400000000');
  });

  it('refuses a suspended account, naming it', async () => {
    const a = await fresh('1');
    await db.query('UPDATE accounts SET suspended = true WHERE id = $1', [a.accountId]);
    await expect(hold(a, '0.1')).rejects.toMatchObject({ code: 'insufficient_credits', message: expect.stringMatching(/suspended/) });
  });
});
