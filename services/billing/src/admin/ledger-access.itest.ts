import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createMemoryBus } from '@gateway/bus';
import { DEFAULT_CONFIG, parseConfig } from '@gateway/config';
import { openTestDb, type TestDb } from '@gateway/db/testing';
import { errorHandler } from '@gateway/errors';
import { createLogger } from '@gateway/service-kit';
import { type BillingService, createBillingService } from '../index';
import { MemoryLedger } from '../ledger/memory/memory-ledger';
import { migrations } from '../migrations';

/**
 * Issue 31, item 1: the admin API beside the in-memory ledger once stilled it (drained the write-behind, made memory
 * reload every account) for every non-GET request before the token was checked, so a flood of unauthenticated POSTs
 * cost every paid call. The ledger may be stilled only for an authenticated change.
 */
describe('the admin API beside the in-memory ledger', () => {
  const adminToken = 'admin-token-for-the-ledger-access-test';
  let t: TestDb;
  let billing: BillingService;
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    t = await openTestDb('pglite', 'billing', migrations);
    billing = await createBillingService({
      db: t.db,
      bus: createMemoryBus(),
      config: parseConfig(DEFAULT_CONFIG),
      logger: createLogger('test', 'silent'),
      adminToken,
      inMemory: {},
    });
    server = http.createServer(
      express()
        .use(billing.adminRouter)
        .use(errorHandler(() => '')),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await billing.stop();
    await t.close();
  });
  afterEach(() => jest.restoreAllMocks());

  const post = (path: string, token: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('never stills the ledger for an unauthenticated write, and does for an authenticated change only', async () => {
    const created = await post('/admin/v1/accounts', adminToken, { credits: 1 });
    expect(created.status).toBe(201);
    const { account_id: accountId } = (await created.json()).data;

    const exclusive = jest.spyOn(MemoryLedger.prototype, 'exclusive');
    const flushed = jest.spyOn(MemoryLedger.prototype, 'flushed');
    for (let i = 0; i < 20; i++) expect((await post(`/admin/v1/accounts/${accountId}/credits`, 'wrong-token', { amount: 1 })).status).toBe(401);
    expect(exclusive).not.toHaveBeenCalled();
    expect(flushed).not.toHaveBeenCalled();

    const added = await post(`/admin/v1/accounts/${accountId}/credits`, adminToken, { amount: '0.5' });
    expect(added.status).toBe(200);
    expect((await added.json()).data.total_credits).toBe(1.5);
    expect(exclusive).toHaveBeenCalledTimes(1);
  });
});
