import { esc, percent, statusMain, statusPage, type StatusPageData, utc } from './status-html';

const day = (date: string, state: string, uptime: number | null, sampleCount: number) => ({ date, state, uptime, sampleCount });

function body(over: Partial<StatusPageData> = {}): StatusPageData {
  const history = Array.from({ length: 90 }, (_, i) => day(`2026-09-${String((i % 28) + 1).padStart(2, '0')}`, 'none', null, 0));
  history[87] = day('2026-11-26', 'down', 0.25, 4);
  history[88] = day('2026-11-27', 'degraded', 0.9, 10);
  history[89] = day('2026-11-28', 'operational', 0.99951, 1);
  return {
    overall: 'DEGRADED',
    monitored: true,
    windowDays: 90,
    generatedAt: '2026-11-28T01:02:03.456Z',
    components: [
      {
        key: 'api',
        name: 'API <b>',
        description: 'The "public" API & more',
        status: 'DEGRADED',
        uptime: 0.5,
        latencyMs: 4,
        latencyMeaning: 'Round trip',
        sampleCount: 15,
        checkedAt: '2026-11-28T01:02:00.000Z',
        history,
      },
    ],
    ...over,
  };
}

describe('the status page HTML', () => {
  it('escapes every text of the body: nothing in it becomes markup', () => {
    expect(esc(`<script>"a"&'b'</script>`)).toBe('&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;&lt;/script&gt;');
    const html = statusPage(body());
    expect(html).not.toContain('<b>');
    expect(html).toContain('API &lt;b&gt;');
    expect(html).toContain('The &quot;public&quot; API &amp; more');
  });

  it('draws one focusable bar per day, its date, state and uptime in the title and the accessible name', () => {
    const html = statusMain(body());
    const bars = html.match(/<li class="day [^"]+" tabindex="0" title="[^"]+" aria-label="[^"]+"><\/li>/g) ?? [];
    expect(bars).toHaveLength(90);
    expect(bars[89]).toBe(
      '<li class="day d-ok" tabindex="0" title="2026-11-28: operational, 99.95% uptime (1 sample)" aria-label="API &lt;b&gt;, 2026-11-28: operational, 99.95% uptime (1 sample)"></li>',
    );
    expect(bars[88]).toContain('class="day d-degraded"');
    expect(bars[88]).toContain('2026-11-27: degraded, 90% uptime (10 samples)');
    expect(bars[87]).toContain('class="day d-down"');
    expect(bars[0]).toContain('no data, no data uptime (0 samples)');
  });

  it('says each state in words with a symbol, and when it was checked', () => {
    const html = statusMain(body());
    expect(html).toContain('<span class="overall-text">Some systems degraded</span>');
    expect(html).toContain('<span class="status s-degraded"><span class="symbol" aria-hidden="true">!</span> Degraded</span>');
    expect(html).toContain('Last checked <time datetime="2026-11-28T01:02:03.456Z">2026-11-28 01:02:03 UTC</time>');
    for (const [overall, words] of [
      ['OPERATIONAL', 'All systems operational'],
      ['DOWN', 'Major outage'],
      ['UNCONFIGURED', 'Not monitored'],
      ['SOMETHING', 'Unknown'],
    ])
      expect(statusMain(body({ overall }))).toContain(`<span class="overall-text">${words}</span>`);
    expect(statusMain(body({ monitored: false }))).toContain('the monitor is switched off');
  });

  it('loads its script and styles from this origin only, and no inline script', () => {
    const html = statusPage(body());
    expect(html).toContain('<script type="module" src="/pages/status.js"></script>');
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/ on[a-z]+=|style=/);
  });

  it('formats uptime and times', () => {
    expect(percent(null)).toBe('no data');
    expect(percent(1)).toBe('100%');
    expect(percent(0.123456)).toBe('12.35%');
    expect(utc(null)).toBe('never');
    expect(utc('not a time')).toBe('unknown');
  });
});
