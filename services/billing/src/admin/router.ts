import { Router } from 'express';
import type { Db } from '@gateway/db';
import { jsonBody, validate } from '@gateway/service-kit';
import { addCredits, createAccount, creditsRecord, rotateWebhookSecret, updateAccount } from '../ledger/accounts';
import { createKey, revokeKey } from '../ledger/keys';
import { pageOf } from '../paging';
import { type AccountDefaults, accountDetail, accountView, listAccounts } from './accounts';
import { requireAdmin } from './auth';
import { createAccountBody, createKeyBody, creditsBody, listAccountsQuery, patchAccountBody } from './schemas';

/**
 * How the admin API reaches tables that an in-memory ledger also decides on (billing's index.ts supplies it).
 * Both calls come after the token is checked and the body is read whole, so no client can hold them open.
 */
export interface AdminLedgerAccess {
  /** Resolves once the tables hold every ledger decision made before the call. */
  caughtUp(): Promise<void>;
  /** Runs a change to the ledger's figures (credits, suspension, keys and caps) so the ledger sees it exactly. */
  change<T>(work: () => Promise<T>): Promise<T>;
}

/** The SQL ledger decides on the tables themselves: nothing to wait for. */
export const tablesOnly: AdminLedgerAccess = { caughtUp: async () => {}, change: (work) => work() };

/** The operator's admin API (spec/operations.md), mounted at /admin/v1. */
export function adminRouter(
  db: Db,
  /** The config's limits, shown for an account that sets none of its own. */
  defaults: AccountDefaults,
  adminTokenHash: string,
  onKeyRevoked: (keyId: string) => void,
  /** Told after an account is created (billing announces it on the bus); must not throw. */
  onAccountOpened: (accountId: string) => void = () => {},
  ledger: AdminLedgerAccess = tablesOnly,
): Router {
  const r = Router();
  // Before anything else: an unauthenticated request must cost nothing, least of all the ledger's attention.
  r.use(requireAdmin(adminTokenHash));
  r.use(jsonBody('64kb'));

  r.post('/accounts', async (req, res) => {
    const body = validate(createAccountBody, req.body ?? {});
    // A new account is nothing the ledger holds in memory yet: no need to still it.
    const id = await createAccount(db, body.credits ?? 0n, body);
    onAccountOpened(id);
    res.status(201).json({ data: { account_id: id } });
  });

  r.get('/accounts', async (req, res) => {
    const q = validate(listAccountsQuery, req.query);
    await ledger.caughtUp();
    const rows = await listAccounts(db, { search: q.search, after: q.cursor, limit: q.limit + 1 });
    res.json(pageOf(rows, q.limit, accountView(defaults)));
  });

  r.get('/accounts/:id', async (req, res) => {
    await ledger.caughtUp();
    // The account as the list shows it, the Credits record (this route's answer before the console needed more),
    // then its keys.
    const credits = await creditsRecord(db, req.params.id);
    const { keys, ...account } = await accountDetail(db, req.params.id, defaults);
    res.json({ data: { ...account, ...credits, keys } });
  });

  r.patch('/accounts/:id', async (req, res) => {
    const patch = validate(patchAccountBody, req.body ?? {});
    await ledger.change(() => updateAccount(db, req.params.id, patch));
    res.json({ data: { account_id: req.params.id } });
  });

  r.post('/accounts/:id/credits', async (req, res) => {
    const { amount } = validate(creditsBody, req.body ?? {});
    const record = await ledger.change(async () => {
      await addCredits(db, req.params.id, amount);
      // Read inside the change: a hold placed after it would not be in the tables yet.
      return creditsRecord(db, req.params.id);
    });
    res.json({ data: record });
  });

  r.post('/accounts/:id/keys', async (req, res) => {
    const body = validate(createKeyBody, req.body ?? {});
    const created = await ledger.change(() =>
      createKey(db, req.params.id, {
        label: body.label,
        limitNano: body.limit ?? null,
        expiresAt: body.expires_at ?? null,
      }),
    );
    res.status(201).json({ data: created });
  });

  r.delete('/keys/:keyId', async (req, res) => {
    await ledger.change(() => revokeKey(db, req.params.keyId));
    onKeyRevoked(req.params.keyId);
    res.status(204).end();
  });

  r.post('/accounts/:id/webhook-secret', async (req, res) => {
    res.json({ data: { secret: await rotateWebhookSecret(db, req.params.id) } });
  });

  return r;
}
