#!/usr/bin/env node
// The API through a deployed edge (GATEWAY_URL) with the admin token (GATEWAY_ADMIN_TOKEN): what a platform team
// checks after `helm install`, and what deploy/kind/e2e.sh runs against its cluster. Uses the chart's demo
// catalogue. Prints one line per check and "N passed, N failed"; exits 1 when any failed.
const base = process.env.GATEWAY_URL?.replace(/\/$/, '');
const adminToken = process.env.GATEWAY_ADMIN_TOKEN;
if (!base || !adminToken) {
  console.error('cluster-checks: set GATEWAY_URL and GATEWAY_ADMIN_TOKEN');
  process.exit(2);
}

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}
function expect(cond, detail) {
  if (!cond) throw new Error(detail);
}
async function call(method, path, { token, body } = {}) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, json, text };
}

let key;
await check('GET /v1/models answers the catalogue', async () => {
  const r = await call('GET', '/v1/models');
  expect(r.status === 200 && r.json.data.length > 0, `${r.status} ${r.text.slice(0, 200)}`);
});
await check('the admin API makes an account with credits and a key', async () => {
  const account = await call('POST', '/admin/v1/accounts', { token: adminToken, body: { credits: 5 } });
  expect(account.status === 201, `account: ${account.status} ${account.text}`);
  const made = await call('POST', `/admin/v1/accounts/${account.json.data.account_id}/keys`, { token: adminToken, body: { label: 'kind-e2e' } });
  expect(made.status === 201, `key: ${made.status} ${made.text}`);
  key = made.json.data.key;
});
await check('a chat completion is answered and reports usage', async () => {
  const r = await call('POST', '/v1/chat/completions', {
    token: key,
    body: { model: 'demo/chat-small', messages: [{ role: 'user', content: 'Hello' }] },
  });
  expect(r.status === 200 && r.json.usage?.total_tokens > 0, `${r.status} ${r.text.slice(0, 200)}`);
});
await check('a streamed chat completion arrives as server-sent events to [DONE]', async () => {
  const r = await call('POST', '/v1/chat/completions', {
    token: key,
    body: { model: 'demo/chat-small', stream: true, messages: [{ role: 'user', content: 'Hello' }] },
  });
  expect(r.status === 200 && r.text.trimEnd().endsWith('data: [DONE]'), `${r.status} ${r.text.slice(-200)}`);
});
await check('embeddings', async () => {
  const r = await call('POST', '/v1/embeddings', { token: key, body: { model: 'demo/embed-small', input: 'hello' } });
  expect(r.status === 200 && r.json.data[0].embedding.length > 0, `${r.status} ${r.text.slice(0, 200)}`);
});
await check('an image (media, its volume)', async () => {
  const r = await call('POST', '/v1/images/generations', { token: key, body: { model: 'demo/image-small', prompt: 'a square' } });
  expect(r.status === 200 && r.json.data.length === 1, `${r.status} ${r.text.slice(0, 200)}`);
});
await check('a video job runs to its file (jobs, media, the bus)', async () => {
  const submit = await call('POST', '/v1/videos', { token: key, body: { model: 'demo/video-small', prompt: 'waves', duration: 1 } });
  expect(submit.status === 202, `submit: ${submit.status} ${submit.text}`);
  const id = submit.json.request_id;
  let result;
  for (let i = 0; i < 60 && result?.status !== 200; i++) {
    if (i) await new Promise((r) => setTimeout(r, 1000));
    result = await call('GET', `/v1/videos/${id}`, { token: key });
  }
  expect(result.status === 200 && result.json.outcome === 'succeeded', `result: ${result.status} ${result.text.slice(0, 200)}`);
  const content = await fetch(`${base}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}` } });
  expect(content.status === 200 && content.headers.get('content-type') === 'video/mp4', `content: ${content.status}`);
});
await check('the calls were billed (the settles crossed the bus to billing)', async () => {
  let usage = 0;
  for (let i = 0; i < 30 && !(usage > 0); i++) {
    if (i) await new Promise((r) => setTimeout(r, 1000));
    usage = (await call('GET', '/v1/credits', { token: key })).json?.data?.total_usage;
  }
  expect(usage > 0, `total_usage ${usage}`);
});
await check('/metrics is not on the public port', async () => {
  const r = await call('GET', '/metrics');
  expect(r.status === 404, `${r.status}`);
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
