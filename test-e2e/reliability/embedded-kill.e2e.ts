import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openServiceDb } from '@gateway/db';
import { waitFor, type RunningProcess } from '@gateway/testing';
import { migrations as billingMigrations } from '@gateway/billing';
import { journalDirOf, readJournal } from '@gateway/billing/testing';
import { testConfig, TEXT_PRICE } from '../support/config';
import { startFakeOpenAI, type FakeUpstream } from '../support/fake-openai';
import { expectLedgerInvariants } from '../support/harness';
import { textCost } from '../support/money';
import { freePort, startChildGateway } from '../support/child-gateway';

/** What one `test/ok` call costs: the fake answers 3 prompt and 1 completion tokens. */
const PER_CALL = textCost(TEXT_PRICE, 3, 1);
/**
 * The window docs/reliability.md promises: a kill loses at most the settles of answers delivered this long before it
 * (a settle is acknowledged once its journal record is on disk; what the kill can catch is the few milliseconds
 * between the answer and that sync). Generous here for a loaded test machine; the test reports what it saw.
 */
const LOSS_WINDOW_MS = 1_000;
const CONCURRENCY = 16;

/**
 * The embedded gateway (`pnpm start`, a child process on a data directory) killed with SIGKILL under load, then
 * started again on the same directory: the ledger's journal is replayed, the holds of the requests it killed are
 * released (a stream past its checkpoint charged what it had delivered by then), every answer delivered before the
 * window is charged exactly once, and nothing is charged twice.
 */
describe('the embedded gateway killed under load (SIGKILL, child process)', () => {
  let dir: string;
  let fake: FakeUpstream;
  let port: number;
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const running: RunningProcess[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-kill-'));
    fake = await startFakeOpenAI();
    port = await freePort();
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(testConfig(fake.url)));
  });
  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    await fake?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const url = () => `http://127.0.0.1:${port}`;
  const start = async (): Promise<RunningProcess> => {
    const p = await startChildGateway({ dir, port, adminToken });
    running.push(p);
    return p;
  };
  const admin = async (p: string, body: unknown) =>
    (
      await fetch(`${url()}${p}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json();

  it('loses no settle older than the window, charges nothing twice, and leaves no hold open', async () => {
    const first = await start();
    const accountId = (await admin('/admin/v1/accounts', { credits: 1000, rate_limit: { requests: 1_000_000, interval: '60s' } })).data.account_id;
    const key = (await admin(`/admin/v1/accounts/${accountId}/keys`, { label: 'kill' })).data.key;

    // Every answer the clients got, with when they got it: half of them streamed, whole only with its [DONE].
    const answered: { requestId: string; at: number }[] = [];
    let killed = false;
    const call = (model: string, stream: boolean) =>
      fetch(`${url()}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 5, stream }),
      });
    const client = async (n: number) => {
      const stream = n % 2 === 1;
      while (!killed) {
        try {
          const r = await call('test/ok', stream);
          const body = await r.text();
          const whole = stream ? body.includes('data: [DONE]') && !body.includes('"error"') : JSON.parse(body).choices !== undefined;
          if (r.status === 200 && whole) answered.push({ requestId: r.headers.get('x-gateway-request-id')!, at: Date.now() });
        } catch {
          // The kill cuts whatever was in flight: those requests were never answered, and must not stay held.
        }
      }
    };
    // Streams the kill catches mid-way: their first words are out, the rest comes two seconds apart (8 s in all).
    const midStream: string[] = [];
    // Trickle streams that ended whole before the kill: ordinary calls, charged their tokens at the text price.
    const wholeStreams = new Set<string>();
    const streamStarted = new Map<string, number>();
    const streamer = async () => {
      while (!killed) {
        try {
          const r = await call('test/trickle', true);
          const reader = r.body!.getReader();
          await reader.read();
          const id = r.headers.get('x-gateway-request-id')!;
          midStream.push(id);
          streamStarted.set(id, Date.now());
          while (!(await reader.read()).done);
          // Whole before the kill came: an ordinary charged call, not one the kill cut.
          midStream.splice(midStream.indexOf(id), 1);
          wholeStreams.add(id);
        } catch {
          // cut by the kill, as intended
        }
      }
    };
    const streamers = Array.from({ length: 4 }, streamer);
    const clients = Array.from({ length: CONCURRENCY }, (_, n) => client(n));
    // Both a count and an age: on a fast machine 600 answers take less than the window, and none would be old enough
    // to check.
    // And until a stream still in flight has its checkpoint in the journal, where a kill cannot take it back: its age
    // alone (the checkpoint comes 5 s in) says nothing on a host slow enough to run the timer late.
    const journalled = () => {
      try {
        return new Set(readJournal(journalDirOf(path.join(dir, 'data'))).flatMap((r) => (r.t === 'checkpoint' ? [r.h.request] : [])));
      } catch {
        return new Set<string>(); // a segment the write-behind retired while it was read: look again
      }
    };
    const pastCheckpoint = () => {
      if (!midStream.some((id) => Date.now() - (streamStarted.get(id) ?? Date.now()) > 5_000)) return false;
      const seen = journalled();
      return midStream.some((id) => seen.has(id));
    };
    await waitFor(
      () => answered.length >= 600 && answered[0].at < Date.now() - 2 * LOSS_WINDOW_MS && pastCheckpoint(),
      'the load to run a while',
      60_000,
    );
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    killed = true;
    await first.exited;
    await Promise.all([...clients, ...streamers]);

    const second = await start();
    // Usually the dead process's journal held records its write-behind had not written yet, and this start replayed
    // them; a kill during a stall longer than the write-behind's gathering delay leaves nothing to replay. So it is
    // reported, not asserted: memory-ledger.itest.ts proves the replay itself on a journal it controls.
    const replayed = /ledger journal replayed/.test(second.output());
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const billing = await openServiceDb('billing', billingMigrations, { dataDir: path.join(dir, 'data') });
    try {
      const gw = { ledger: (sql: string, params?: unknown[]) => billing.query(sql, params) as Promise<any[]> };
      await expectLedgerInvariants(gw);
      expect(await gw.ledger(`SELECT id FROM holds WHERE state = 'open'`)).toEqual([]);
      const records = new Map(
        (
          await gw.ledger(
            `SELECT request_id, status, error_code, tokens_prompt, tokens_completion, total_cost::text AS cost FROM usage_records WHERE account_id = $1`,
            [accountId],
          )
        ).map((r) => [r.request_id, r]),
      );
      const old = answered.filter((a) => a.at < killedAt - LOSS_WINDOW_MS);
      expect(old.length).toBeGreaterThan(0);
      const lost = old.filter((a) => records.get(a.requestId)?.cost !== PER_CALL.toString());
      expect(lost).toEqual([]);
      // Charged once each: no answered call's record above the per-call price, and the usage is exactly the records' sum.
      const cut = new Set(midStream);
      const charged = [...records.values()].filter((r) => r.cost !== '0' && !cut.has(r.request_id));
      for (const r of charged) {
        const price = wholeStreams.has(r.request_id) ? textCost(TEXT_PRICE, r.tokens_prompt, r.tokens_completion) : PER_CALL;
        expect({ id: r.request_id, cost: r.cost }).toEqual({ id: r.request_id, cost: price.toString() });
      }
      const [{ usage }] = await gw.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [accountId]);
      const recorded = [...records.values()].reduce((sum, r) => sum + BigInt(r.cost), 0n);
      expect(usage).toBe(recorded.toString());
      // The streams cut mid-way: one past its checkpoint is charged what it had delivered by then, as its record says
      // (the restart applied the checkpoint it found in the journal); one cut before any is released, charged nothing.
      expect(midStream.length).toBeGreaterThan(0);
      const checkpointed = midStream.filter((id) => (records.get(id)?.cost ?? '0') !== '0');
      expect(checkpointed.length).toBeGreaterThan(0);
      for (const id of checkpointed) {
        const r = records.get(id);
        expect({ id, error: r.error_code, cost: r.cost }).toEqual({
          id,
          error: 'hold_expired',
          cost: textCost(TEXT_PRICE, r.tokens_prompt, r.tokens_completion).toString(),
        });
        expect(r.tokens_completion).toBeGreaterThan(0);
      }
      // Answers the kill caught inside the window may have lost their settle: the figure docs/reliability.md reports.
      const unsettled = answered.filter((a) => records.get(a.requestId)?.cost !== PER_CALL.toString());
      const youngest = unsettled.length ? Math.max(...unsettled.map((a) => killedAt - a.at)) : 0;
      console.log(
        `embedded kill: ${answered.length} answered, ${charged.length} charged, ${unsettled.length} answered but unsettled (oldest ${youngest} ms before the kill); ${checkpointed.length} of ${midStream.length} cut streams charged their checkpoint; journal ${replayed ? 'replayed' : 'had nothing to replay'}`,
      );
    } finally {
      await billing.close();
    }
  }, 300_000);
});
