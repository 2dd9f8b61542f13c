/// <reference lib="dom" />
import * as z from 'zod/mini';
import { loadAccounts } from './admin/accounts';
import { closeSecret, openAccount, wireDetail } from './admin/detail';
import { call } from './lib/api';
import { byId } from './lib/dom';
import { credentialGate, guardedSection } from './lib/gate';

/**
 * The operator console: everything through the admin API (/admin/v1) with the pasted admin token. A refused token
 * (401) takes the page back to the form with the envelope's message; any other refusal shows where it happened.
 */
const gate = credentialGate('gateway.admin.token', (token) => void list(token));
let search = '';

const guarded = (errorId: string, work: () => Promise<void>) => guardedSection(gate, errorId, work);

const open = (id: string) => {
  const t = gate.token();
  closeSecret();
  if (t) void guarded('detail-error', () => openAccount(t, id)).then(() => byId('detail-card').scrollIntoView());
};
const list = (token: string, more = false) => guarded('accounts-error', () => loadAccounts(token, search, open, more));

byId('search').addEventListener('submit', (e) => {
  e.preventDefault();
  search = byId<HTMLInputElement>('search-text').value.trim();
  const t = gate.token();
  if (t) void list(t);
});
byId('accounts-more').addEventListener('click', () => {
  const t = gate.token();
  if (t) void list(t, true);
});
byId('create-account').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = gate.token();
  const credits = byId<HTMLInputElement>('new-credits').value.trim() || '0';
  if (!t) return;
  void guarded('create-error', async () => {
    const r = await call(t, 'POST', '/admin/v1/accounts', z.object({ data: z.object({ account_id: z.string() }) }), { credits });
    await list(t);
    open(r.data.account_id);
  });
});
wireDetail(
  gate.token,
  () => {
    const t = gate.token();
    if (t) void list(t);
  },
  guarded,
);
