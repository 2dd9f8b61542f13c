import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeOrSkip, REPO_ROOT, waitFor } from '@gateway/testing';
import { silentMp4 } from '@gateway/upstreams';
import { CONTENT_SECURITY_POLICY } from '@gateway/web-pages';
import { chromiumSkipReason, colours, contrast, DESKTOP, launchChromium, PHONE, screenshot } from './support/browser';
import { type FakeFal, startFakeFal } from './support/fake-fal';
import { expectLedgerInvariants, type Mode, settled, startGateway, type TestGateway } from './support/harness';
import { FAL_KEY_ENV, HOLD, heldNano, holdsOf, jobsConfig } from './support/jobs';

/**
 * The three pages in a real browser (Debian's chromium through playwright-core), against the embedded gateway and
 * the fleet: what a person sees is what the API says. The screenshots in the README are taken here (embedded).
 */
const modes: Mode[] = ['embedded', 'fleet'];

/** The console's money figures are the account routes' numbers, shown to the cent. */
const cents = (n: number) => `$${n.toFixed(2)}`;

describeOrSkip('the status page, the account console and the operator console in Chromium', chromiumSkipReason(), () => {
  let browser: Browser;
  beforeAll(async () => {
    // The suite tests the pages as they are in the tree, not a bundle left by an earlier install.
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'libs', 'web-pages', 'build.mjs')], { stdio: 'ignore' });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  describe.each(modes)('through the %s gateway', (mode) => {
    let fal: FakeFal;
    let gw: TestGateway;
    let context: BrowserContext;
    /** Every URL the browser asked for, and the credentials it was given, for the leak checks at the end. */
    const urls: string[] = [];
    const secrets: string[] = [];

    beforeAll(async () => {
      fal = await startFakeFal();
      process.env[FAL_KEY_ENV] = fal.key;
      gw = await startGateway(mode, { ...jobsConfig(fal.url), status: { sample_interval: '1s' } }, { logLevel: 'debug' });
      secrets.push(gw.adminToken);
      context = await browser.newContext({ viewport: DESKTOP });
      context.on('request', (r) => void urls.push(r.url()));
    }, 90_000);
    afterEach(async () => {
      if (!gw) return;
      await settled(gw);
      await expectLedgerInvariants(gw);
    });
    afterAll(async () => {
      await context?.close();
      await gw?.stop();
      await fal?.close();
    });

    const api = async (key: string, method: string, p: string, body?: unknown) => {
      const r = await fetch(`${gw.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      return { status: r.status, headers: r.headers, json: text ? JSON.parse(text) : undefined };
    };
    const chat = (key: string) => api(key, 'POST', '/v1/chat/completions', { model: 'test/chat', messages: [{ role: 'user', content: 'Hello' }] });

    /** The console opened with `key` pasted into its form. */
    const openConsole = async (key: string, page?: Page): Promise<Page> => {
      const p = page ?? (await context.newPage());
      await p.goto(`${gw.url}/console`);
      await p.fill('#credential', key);
      await p.click('#login button[type=submit]');
      return p;
    };
    const openAdmin = async (token: string): Promise<Page> => {
      const p = await context.newPage();
      await p.goto(`${gw.url}/admin`);
      await p.fill('#credential', token);
      await p.click('#login button[type=submit]');
      return p;
    };

    /**
     * The page at a phone's width (390 px): nothing wider than the screen, so nothing scrolls sideways. Screenshots of
     * both widths for the README come from the embedded run.
     */
    const atDesktopAndPhone = async (page: Page, name: string) => {
      if (mode === 'embedded') await screenshot(page, `${name}-desktop`);
      await page.setViewportSize(PHONE);
      // What sticks out, named, should the page be wider than the screen: its content differs from run to run.
      const { scrollWidth, sticking } = await page.evaluate((width) => {
        const out = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > width);
        const name = (e: Element) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} to ${Math.round(e.getBoundingClientRect().right)} px`;
        return {
          scrollWidth: document.documentElement.scrollWidth,
          sticking: out.slice(0, 8).map((e) => `${name(e)}: ${e.textContent?.slice(0, 60)}`),
        };
      }, PHONE.width);
      expect({ scrollWidth, sticking: scrollWidth > PHONE.width ? sticking : [] }).toEqual({ scrollWidth: expect.any(Number), sticking: [] });
      expect(scrollWidth).toBeLessThanOrEqual(PHONE.width);
      if (mode === 'embedded') await screenshot(page, `${name}-phone`);
    };

    it('each page loads at most 150 KB of JavaScript, gzipped', async () => {
      for (const p of ['/status', '/console', '/admin']) {
        const html = await (await fetch(`${gw.url}${p}`)).text();
        const scripts = [...html.matchAll(/<script[^>]* src="([^"]+)"/g)].map((m) => m[1] as string);
        expect(scripts).toEqual([expect.stringMatching(/^\/pages\/[a-z]+\.js$/)]);
        let bytes = 0;
        for (const src of scripts) {
          const r = await fetch(`${gw.url}${src}`, { headers: { 'accept-encoding': 'gzip' } });
          expect({ src, status: r.status, encoding: r.headers.get('content-encoding') }).toEqual({ src, status: 200, encoding: 'gzip' });
          bytes += Number(r.headers.get('content-length'));
        }
        expect({ p, within: bytes > 0 && bytes <= 150 * 1024 }).toEqual({ p, within: true });
      }
    });

    it('the status page renders without JavaScript: 90 bars per component, a label per state, AA contrast, its headers', async () => {
      // The monitor samples every second: wait for a measured component, so the page shows real states.
      await waitFor(async () => (await (await fetch(`${gw.url}/v1/status`)).json()).overall !== 'UNCONFIGURED', 'a first status sample', 20_000);
      const noJs = await browser.newContext({ javaScriptEnabled: false, viewport: DESKTOP });
      const page = await noJs.newPage();
      const res = await page.goto(`${gw.url}/status`);
      expect(res?.status()).toBe(200);
      const headers = res!.headers();
      expect(headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(headers['x-content-type-options']).toBe('nosniff');
      expect(headers['referrer-policy']).toBe('no-referrer');

      const status = (await (await fetch(`${gw.url}/v1/status`)).json()) as { components: { name: string; history: { date: string }[] }[] };
      const names = await page.$$eval('.component h2', (els) => els.map((e) => e.textContent));
      expect(names).toEqual(status.components.map((c) => c.name));
      for (const c of status.components) {
        const bars = page.locator(`.component:has(h2:text-is("${c.name}")) li.day`);
        expect(await bars.count()).toBe(90);
        // Today's bar: focusable, with its date, state and uptime in the title and the accessible name.
        const today = bars.last();
        expect(await today.getAttribute('tabindex')).toBe('0');
        expect(await today.getAttribute('title')).toMatch(new RegExp(`^${c.history[89]?.date}: (operational|degraded|down|no data), `));
        expect(await today.getAttribute('aria-label')).toBe(`${c.name}, ${await today.getAttribute('title')}`);
      }
      // Each component's state in words beside its colour; the overall too.
      expect(await page.locator('.component .status').allTextContents()).toEqual(
        expect.arrayContaining([expect.stringMatching(/Operational|Degraded|Down|Not monitored/)]),
      );
      expect(await page.textContent('.overall-text')).toMatch(/operational|degraded|outage|Not monitored/i);
      expect(await page.textContent('.checked')).toMatch(/^Last checked \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
      // Keyboard: a focused bar shows its tooltip (the title, drawn by CSS, no script).
      await page.focus('.component li.day:last-child');
      const tip = await page.$eval('.component li.day:last-child', (el) => getComputedStyle(el, '::after').content);
      expect(tip).toBe(JSON.stringify(await page.getAttribute('.component li.day:last-child', 'title')));

      // WCAG AA: text at least 4.5:1 on what is behind it; the bars' colours at least 3:1 on the card.
      for (const c of await colours(page, 'h1, h2, .status, .description, .figures, .checked, .overall, .legend li, .axis, footer p')) {
        expect({ text: c.text, ratio: contrast(c.fg, c.bg) >= 4.5 }).toEqual({ text: c.text, ratio: true });
      }
      const card = await page.$eval('.component', (el) => getComputedStyle(el).backgroundColor);
      for (const v of ['--ok', '--degraded', '--down', '--none']) {
        const colour = await page.evaluate((name) => {
          const probe = document.createElement('span');
          probe.style.color = `var(${name})`;
          document.body.append(probe);
          const c = getComputedStyle(probe).color;
          probe.remove();
          return c;
        }, v);
        expect({ v, ratio: contrast(colour, card) >= 3 }).toEqual({ v, ratio: true });
      }
      await atDesktopAndPhone(page, 'status');
      await noJs.close();
    });

    it('with JavaScript the status page refreshes itself from /v1/status', async () => {
      const page = await context.newPage();
      await page.clock.install();
      const fetched: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === '/v1/status') fetched.push(r.url());
      });
      await page.goto(`${gw.url}/status`);
      await page.waitForSelector('body[data-refreshed-at]');
      const first = await page.getAttribute('body', 'data-refreshed-at');
      expect(await page.textContent('#refresh-note')).toMatch(/refreshes itself every 30 s/);
      // The answer is cached for a sample interval (1 s here): past it, the next refresh shows a newer one.
      await new Promise((r) => setTimeout(r, 1_100));
      await page.clock.fastForward(30_000);
      await page.waitForFunction((before) => document.body.dataset.refreshedAt !== before, first);
      expect(fetched.length).toBeGreaterThanOrEqual(2);
      expect(await page.locator('.component li.day').count()).toBe(4 * 90);
      await page.close();
    });

    it('a pasted key shows the balance of /v1/credits; a chat made through the API is in recent calls with its exact cost', async () => {
      const acct = await gw.account('7.25', { keyLimit: 5 });
      secrets.push(acct.key);
      const reply = await chat(acct.key);
      expect(reply.status).toBe(200);
      const requestId = reply.headers.get('x-gateway-request-id') as string;
      const cost = reply.json.usage.cost as string;
      await settled(gw, acct.accountId);

      const page = await openConsole(acct.key);
      await page.waitForSelector('[data-figure=available]');
      // The form is gone once the key is in use.
      expect(await page.isHidden('#login')).toBe(true);
      const credits = (await api(acct.key, 'GET', '/v1/credits')).json.data;
      const figure = (name: string) => page.textContent(`[data-figure=${name}]`);
      expect({
        total_credits: await figure('total_credits'),
        total_usage: await figure('total_usage'),
        balance: await figure('balance'),
        held: await figure('held'),
        available: await figure('available'),
      }).toEqual({
        total_credits: cents(credits.total_credits),
        total_usage: cents(credits.total_usage),
        balance: cents(credits.balance),
        held: cents(credits.held),
        available: cents(credits.available),
      });
      const keyRecord = (await api(acct.key, 'GET', '/v1/key')).json.data;
      expect(await figure('limit')).toBe(cents(keyRecord.limit));
      expect(await figure('limit_remaining')).toBe(cents(keyRecord.limit_remaining));

      // Recent calls: the chat, at its exact charge; its record opens with every field.
      await page.waitForSelector(`[data-cost="${requestId}"]`);
      expect(await page.textContent(`[data-cost="${requestId}"]`)).toBe(`$${cost}`);
      await page.click(`[data-generation="${requestId}"]`);
      await page.waitForSelector('#generation[open] [data-field=cost]');
      expect(await page.textContent('#generation [data-field=cost]')).toBe(cost);
      expect(await page.textContent('#generation [data-field=model]')).toBe('test/chat');
      await page.click('#generation button');

      // Activity: the day's spending by model, charted and tabled.
      await page.waitForSelector('svg.chart rect');
      expect(await page.locator('svg.chart rect title').first().textContent()).toMatch(/test\/chat/);
      await atDesktopAndPhone(page, 'console');
      await page.close();
    });

    it('a job cancelled from the page releases its hold; a finished video plays in the page', async () => {
      const acct = await gw.account(10);
      secrets.push(acct.key);
      const done = await api(acct.key, 'POST', '/v1/videos', { model: 'test/video', prompt: 'a lighthouse', duration: 2 });
      expect(done.status).toBe(202);
      await waitFor(
        async () =>
          (await api(acct.key, 'GET', `/v1/jobs?limit=5`)).json.data.some((j: any) => j.request_id === done.json.request_id && j.cost !== null),
        'the finished job to be charged',
        20_000,
      );
      const held = await api(acct.key, 'POST', '/v1/videos', { model: 'test/video', prompt: 'a long one', duration: 3, fake: HOLD });
      const id = held.json.request_id as string;
      await waitFor(async () => (await heldNano(gw, acct.accountId)) > 0n, 'the job hold', 10_000);

      const page = await openConsole(acct.key);
      await page.click(`[data-cancel="${id}"]`);
      await page.waitForFunction((job) => document.querySelector(`[data-job-status="${job}"]`)?.textContent?.includes('canceled'), id);
      // In the fleet the release reaches the ledger over the bus, after the cancel answered (CI saw the hold still open).
      await settled(gw, acct.accountId, 20_000);
      expect(await heldNano(gw, acct.accountId)).toBe(0n);
      expect((await holdsOf(gw, acct.accountId)).find((h) => h.amount !== '0' && h.state !== 'settled')).toMatchObject({
        state: 'released',
        charge: '0',
      });
      expect((await api(acct.key, 'GET', '/v1/credits')).json.data.held).toBe(0);
      // The page read its figures before the release landed: it shows it when refreshed.
      await page.click('#refresh');
      await page.waitForFunction(() => document.querySelector('[data-figure=held]')?.textContent === '$0.00');

      // The finished one: fetched with the key into a blob URL, since a <video src> cannot carry the header.
      await page.click(`[data-play="${done.json.request_id}"]`);
      const video = page.locator(`video[data-job="${done.json.request_id}"]`);
      await video.waitFor();
      expect(await video.getAttribute('src')).toMatch(/^blob:/);
      expect(Number(await video.getAttribute('data-bytes'))).toBe(silentMp4(2).length);
      // Chromium reads it as a video: its metadata loads from the blob.
      await page.waitForFunction(
        (job) => (document.querySelector(`video[data-job="${job}"]`) as HTMLVideoElement).readyState >= 1,
        done.json.request_id,
      );
      expect(await video.evaluate((v: HTMLVideoElement) => Math.round(v.duration))).toBe(2);
      await page.close();
    });

    it('the operator creates an account, tops it up, creates a key, which works until revoked there', async () => {
      const page = await openAdmin(gw.adminToken);
      await page.waitForSelector('#accounts table');
      expect(await page.isHidden('#login')).toBe(true);
      // A refusal other than the token's stays in its own section, with the envelope's message; the page stays open.
      await page.fill('#new-credits', 'lots');
      await page.click('#create-account button');
      await page.waitForSelector('#create-error:not([hidden])');
      const badCredits = await api(gw.adminToken, 'POST', '/admin/v1/accounts', { credits: 'lots' });
      expect(badCredits.status).toBe(400);
      expect(await page.textContent('#create-error')).toContain(badCredits.json.error.message);
      expect(await page.isHidden('#login')).toBe(true);
      await page.fill('#new-credits', '0');
      await page.click('#create-account button');
      await page.waitForSelector('#detail-card:not([hidden]) [data-figure=available]');
      // The success clears the section's earlier failure.
      expect(await page.isHidden('#create-error')).toBe(true);
      const accountId = ((await page.textContent('#detail-h')) as string).replace('Account ', '');
      expect(accountId).toMatch(/^acct_/);
      expect(await page.textContent('[data-figure=available]')).toBe('$0.00');

      await page.fill('#credit-amount', '3.5');
      await page.click('#credits button');
      await page.waitForFunction(() => document.querySelector('[data-figure=available]')?.textContent === '$3.50');
      // A correction that would take available below zero is refused, with the envelope's message.
      await page.fill('#credit-amount', '-10');
      await page.click('#credits button');
      await page.waitForSelector('#detail-error:not([hidden])');
      const refused = await page.textContent('#detail-error');
      const direct = await api(gw.adminToken, 'POST', `/admin/v1/accounts/${accountId}/credits`, { amount: -10 });
      expect(direct.status).toBe(400);
      expect(refused).toContain(direct.json.error.message);

      await page.fill('#key-label', 'from the console');
      await page.click('#create-key button');
      const key = (await page.locator('[data-secret="New API key"]').textContent()) as string;
      secrets.push(key);
      expect(key).toMatch(/^sk_/);
      expect((await chat(key)).status).toBe(200);

      const keyId = await page.getAttribute('[data-revoke]', 'data-revoke');
      await page.click(`[data-revoke="${keyId}"]`);
      await page.waitForFunction((k) => document.querySelector(`[data-key-state="${k}"]`)?.textContent === 'revoked', keyId);
      await waitFor(async () => (await chat(key)).status === 401, 'the revoked key to be refused', 10_000);

      // Search finds it; suspend and the webhook secret rotate from the page.
      await page.fill('#search-text', accountId);
      await page.click('#search button');
      await page.waitForSelector(`[data-open="${accountId}"]`);
      await page.click('#suspend');
      await page.waitForFunction(() => document.querySelector('[data-figure=state]')?.textContent === 'suspended');
      expect((await api(gw.adminToken, 'GET', `/admin/v1/accounts/${accountId}`)).json.data.suspended).toBe(true);
      await page.click('#rotate');
      await page.waitForSelector('[data-secret="Webhook secret"]');
      await atDesktopAndPhone(page, 'admin');
      await page.close();
    });

    it('a wrong key and a wrong admin token show the error, not a blank page', async () => {
      const wrong = 'sk_live_not-a-key-of-this-gateway';
      const expected = (await api(wrong, 'GET', '/v1/credits')).json.error.message as string;
      const page = await openConsole(wrong);
      await page.waitForSelector('#login-error:not([hidden])');
      expect(await page.textContent('#login-error')).toContain(expected);
      expect(await page.isVisible('#credential')).toBe(true);
      expect(await page.isHidden('#app')).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

      const wrongToken = 'not-the-admin-token';
      const expectedAdmin = (await api(wrongToken, 'GET', '/admin/v1/accounts')).json.error.message as string;
      const admin = await openAdmin(wrongToken);
      await admin.waitForSelector('#login-error:not([hidden])');
      expect(await admin.textContent('#login-error')).toContain(expectedAdmin);
      await page.close();
      await admin.close();
    });

    it('a key revoked, or a token changed, while a page is open: the next action goes back to the sign-in form', async () => {
      const acct = await gw.account(5);
      secrets.push(acct.key);
      // More calls than a page of recent calls holds, so "Older calls" is there to press.
      for (let i = 0; i < 21; i++) expect((await chat(acct.key)).status).toBe(200);
      await settled(gw, acct.accountId);
      const page = await openConsole(acct.key);
      await page.waitForSelector('#calls-more:not([hidden])');
      expect((await gw.admin('DELETE', `/admin/v1/keys/${acct.keyId}`)).status).toBe(204);
      // "Within seconds": the fleet's edge may still hold the key's verification for a few.
      await waitFor(async () => (await api(acct.key, 'GET', '/v1/generations')).status === 401, 'the revoked key to be refused', 10_000);
      const expected = (await api(acct.key, 'GET', '/v1/generations')).json.error.message as string;
      await page.click('#calls-more');
      await page.waitForSelector('#login-error:not([hidden])');
      expect(await page.textContent('#login-error')).toContain(expected);
      expect(await page.isHidden('#app')).toBe(true);
      expect(await page.isHidden('#calls-error')).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

      // The operator console: an action refused for its token returns to the form as well, not an inline error.
      const admin = await openAdmin(gw.adminToken);
      await admin.waitForSelector('#accounts table');
      await admin.fill('#search-text', acct.accountId);
      await admin.click('#search button');
      await admin.waitForSelector(`[data-open="${acct.accountId}"]`);
      await admin.click(`[data-open="${acct.accountId}"]`);
      await admin.waitForSelector('#detail-card:not([hidden]) [data-figure=available]');
      await admin.evaluate(() => {
        for (const k of Object.keys(sessionStorage)) sessionStorage.setItem(k, 'not-the-admin-token');
      });
      await admin.click('#suspend');
      await admin.waitForSelector('#login-error:not([hidden])');
      expect(await admin.isHidden('#detail-error')).toBe(true);
      expect((await gw.admin('GET', `/admin/v1/accounts/${acct.accountId}`)).json.data.suspended).toBe(false);
      await page.close();
      await admin.close();
    });

    it('no key or token in a URL, a cookie, local storage or the logs; the pages send them only as Authorization', async () => {
      const acct = await gw.account(1);
      secrets.push(acct.key);
      const sent: string[] = [];
      const page = await context.newPage();
      page.on('request', (r) => {
        if (new URL(r.url()).pathname.startsWith('/v1/')) sent.push(r.headers().authorization ?? '(none)');
      });
      await openConsole(acct.key, page);
      await page.waitForSelector('[data-figure=available]');
      expect(sent.length).toBeGreaterThan(0);
      expect(new Set(sent)).toEqual(new Set([`Bearer ${acct.key}`]));
      expect(await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.getItem('gateway.console.key') }))).toEqual({
        local: 0,
        session: acct.key,
      });
      // A new tab does not have it: session storage is per tab.
      const other = await openConsoleWithoutKey();
      expect(await other.isVisible('#credential')).toBe(true);
      await other.close();
      await page.close();

      expect(await context.cookies()).toEqual([]);
      expect(urls.length).toBeGreaterThan(10);
      // Everything the gateway logged at debug level. It keeps no access log, so this guards the lines it does write
      // (warnings, errors, each fleet process's start, which makes the fleet's never empty).
      const logs = gw.logs();
      if (mode !== 'embedded') expect(logs.length).toBeGreaterThan(0);
      for (const secret of secrets) {
        expect(urls.filter((u) => u.includes(secret) || u.includes(encodeURIComponent(secret)))).toEqual([]);
        expect(logs.includes(secret)).toBe(false);
      }
    });

    const openConsoleWithoutKey = async () => {
      const p = await context.newPage();
      await p.goto(`${gw.url}/console`);
      return p;
    };
  });
});
