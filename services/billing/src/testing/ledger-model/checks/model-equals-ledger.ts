import { type Fail, got, jsonBig, type Model, show, type Snapshot } from '../model';

/** 8. The model equals the ledger: holds, records, and every account's and key's figures. */
export function checkModelEqualsLedger(model: Model, s: Snapshot, fail: Fail): void {
  for (const id of s.holds.keys()) if (!model.byId.has(id)) fail(`the ledger has a hold ${id} nobody placed`);
  const sums = new Map<string, { usage: bigint; held: bigint }>();
  const add = (id: string, usage: bigint, held: bigint) => {
    const v = sums.get(id) ?? { usage: 0n, held: 0n };
    sums.set(id, { usage: v.usage + usage, held: v.held + held });
  };
  for (const x of model.holds) {
    const row = s.holds.get(x.id);
    if (!row) {
      fail(`hold ${x.id} is missing`);
      continue;
    }
    const closed = x.state === 'settled' || x.state === 'released' || x.lateClosed;
    if (row.state !== x.state || row.charge !== x.charge || row.closed !== closed || row.amount !== x.amount)
      fail(`hold ${x.id} is ${row.state}/${row.charge}/closed=${row.closed}, the model says ${x.state}/${x.charge}/closed=${closed}`);
    // Every closed hold has exactly one usage record (request ids are unique), carrying what was charged.
    if (x.state === 'open') {
      if (row.record) fail(`open hold ${x.id} already has a usage record`);
      if (row.checkpoint !== x.checkpoint) fail(`open hold ${x.id} keeps checkpoint ${row.checkpoint}, the model ${x.checkpoint}`);
    } else {
      const r = row.record;
      if (!r || r.holdId !== x.id || r.cost !== x.charge)
        fail(`hold ${x.id} (${x.state}, charge ${x.charge}) has record ${JSON.stringify(r, jsonBig)}`);
      const outcome = x.state === 'expired' ? x.lateOutcome : x.state === 'settled' ? 'settle' : 'release';
      const want = outcome === null ? ['failed', 'hold_expired'] : outcome === 'settle' ? ['succeeded', null] : ['failed', 'upstream_unavailable'];
      if (r.status !== want[0] || r.errorCode !== want[1]) fail(`hold ${x.id}'s record says ${r.status}/${r.errorCode}, expected ${want.join('/')}`);
    }
    const held = x.state === 'open' ? x.amount : 0n;
    add(x.account, x.charge, held);
    add(x.key, x.charge, held);
  }
  for (const a of model.accounts) {
    const row = got(s.accounts, a.id);
    const want = sums.get(a.id) ?? { usage: 0n, held: 0n };
    // Always balance: credits are their entries, usage the charges taken, held the open holds, records the usage.
    const shown = { credits: row.credits, entries: row.entries, usage: row.usage, held: row.held, recorded: row.recorded };
    const exp = { credits: a.credits, entries: a.credits, usage: want.usage, held: want.held, recorded: want.usage };
    if (show(shown) !== show(exp)) fail(`account ${a.id} shows ${show(shown)}, the model ${show(exp)}`);
    if (row.credits - row.usage - row.held < 0n) fail(`account ${a.id} is overspent: available ${row.credits - row.usage - row.held}`);
    for (const k of a.keys) {
      const kr = got(s.keys, k);
      const kw = sums.get(k) ?? { usage: 0n, held: 0n };
      if (kr.usage !== kw.usage || kr.held !== kw.held || kr.cap !== model.caps.get(k))
        fail(`key ${k} shows usage ${kr.usage} held ${kr.held} cap ${kr.cap}, the model ${kw.usage}/${kw.held}/${model.caps.get(k)}`);
    }
  }
}
