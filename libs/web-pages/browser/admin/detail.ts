/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call, send } from '../lib/api';
import { byId, fill, h, table } from '../lib/dom';
import { usd, when } from '../lib/format';
import type { Guard } from '../lib/gate';
import { accountSummary } from './accounts';

const keyRow = z.object({
  key_id: z.string(),
  label: z.nullable(z.string()),
  limit: z.nullable(z.union([z.number(), z.string()])),
  usage: z.union([z.number(), z.string()]),
  created_at: z.string(),
  expires_at: z.nullable(z.string()),
  revoked: z.boolean(),
});
const detail = z.object({ data: z.extend(accountSummary, { keys: z.array(keyRow) }) });
type Detail = z.infer<typeof detail>['data'];

let current: Detail | undefined;

/** Shows a secret (a new key, a webhook secret) once: the API never shows it again. */
function showSecret(what: string, value: string): void {
  const box = byId('secret');
  fill(box, h('p', {}, `${what} (shown once: copy it now)`), h('code', { 'data-secret': what }, value));
  box.hidden = false;
}

/** One account (GET /admin/v1/accounts/{id}): its figures and keys, and the forms acting on it. */
export async function openAccount(token: string, id: string): Promise<void> {
  const d = (await call(token, 'GET', `/admin/v1/accounts/${encodeURIComponent(id)}`, detail)).data;
  current = d;
  byId('detail-card').hidden = false;
  byId('detail-h').textContent = `Account ${d.account_id}`;
  const item = (name: string, value: string, field: string, exact?: string) => [
    h('dt', {}, name),
    h('dd', { 'data-figure': field, title: exact === undefined ? undefined : `exactly ${usd(exact)}` }, value),
  ];
  fill(
    byId('detail'),
    ...item('State', d.suspended ? 'suspended' : 'active', 'state'),
    ...item('Credits', usd(d.credits), 'credits', d.credits_exact),
    ...item('Usage', usd(d.usage), 'usage', d.usage_exact),
    ...item('Held', usd(d.held), 'held', d.held_exact),
    ...item('Available', usd(d.available), 'available', d.available_exact),
    ...item('Rate limit', d.rate_limit ? `${d.rate_limit.requests} per ${d.rate_limit.interval}` : 'default', 'rate_limit'),
    ...item('Job concurrency', d.job_concurrency ? String(d.job_concurrency) : 'default', 'job_concurrency'),
    ...item('Created', when(d.created_at), 'created_at'),
  );
  byId('suspend').textContent = d.suspended ? 'Resume' : 'Suspend';
  fill(
    byId('keys'),
    table(
      'Keys of the account',
      ['Key id', 'Label', 'Limit', 'Usage', 'Created', 'Expires', 'State', ''],
      d.keys.map((k) => [
        h('code', {}, k.key_id),
        k.label ?? '',
        k.limit === null ? 'none' : usd(k.limit),
        usd(k.usage),
        when(k.created_at),
        when(k.expires_at),
        h('span', { 'data-key-state': k.key_id }, k.revoked ? 'revoked' : 'active'),
        k.revoked
          ? ''
          : h(
              'button',
              {
                type: 'button',
                'data-revoke': k.key_id,
                onclick: () => void act(token, () => send(token, 'DELETE', `/admin/v1/keys/${encodeURIComponent(k.key_id)}`)),
              },
              'Revoke',
            ),
      ]),
      'No keys.',
    ),
  );
}

/**
 * An action on the open account, then the account read again either way; the action's refusal is what shows, unless
 * the read fails too. A refused token (401) from either goes back to the sign-in form, as every section's does.
 */
function actOn(guard: Guard) {
  return async (token: string, work: () => Promise<unknown>): Promise<void> => {
    if (!current) return;
    const id = current.account_id;
    await guard('detail-error', async () => {
      try {
        await work();
      } finally {
        await openAccount(token, id);
      }
    });
  };
}

/** Set by wireDetail: the revoke buttons openAccount draws use it too. */
let act: ReturnType<typeof actOn> = async () => undefined;

export function wireDetail(token: () => string | undefined, afterChange: () => void, guard: Guard): void {
  act = actOn(guard);
  const withToken = (fn: (t: string, id: string) => Promise<void>) => () => {
    const t = token();
    if (t && current) void fn(t, current.account_id).then(afterChange);
  };
  byId('suspend').addEventListener(
    'click',
    withToken((t, id) => act(t, () => send(t, 'PATCH', `/admin/v1/accounts/${encodeURIComponent(id)}`, { suspended: !current?.suspended }))),
  );
  byId('rotate').addEventListener(
    'click',
    withToken((t, id) =>
      act(t, async () => {
        const r = await call(
          t,
          'POST',
          `/admin/v1/accounts/${encodeURIComponent(id)}/webhook-secret`,
          z.object({ data: z.object({ secret: z.string() }) }),
        );
        showSecret('Webhook secret', r.data.secret);
      }),
    ),
  );
  byId('credits').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = byId<HTMLInputElement>('credit-amount');
    const amount = input.value.trim();
    withToken((t, id) =>
      act(t, async () => {
        await send(t, 'POST', `/admin/v1/accounts/${encodeURIComponent(id)}/credits`, { amount });
        input.value = '';
      }),
    )();
  });
  byId('create-key').addEventListener('submit', (e) => {
    e.preventDefault();
    const label = byId<HTMLInputElement>('key-label').value.trim();
    const limit = byId<HTMLInputElement>('key-limit').value.trim();
    withToken((t, id) =>
      act(t, async () => {
        const r = await call(
          t,
          'POST',
          `/admin/v1/accounts/${encodeURIComponent(id)}/keys`,
          z.object({ data: z.object({ key: z.string(), key_id: z.string() }) }),
          { ...(label ? { label } : {}), ...(limit ? { limit } : {}) },
        );
        showSecret('New API key', r.data.key);
      }),
    )();
  });
}

export function closeSecret(): void {
  byId('secret').hidden = true;
}
