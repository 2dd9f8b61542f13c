/// <reference lib="dom" />
import * as z from 'zod/mini';
import { statusMain } from '../src/status-html';

/**
 * With script on, the status page renders itself again from /v1/status every 30 s, with the very renderer the
 * server used, so the page looks the same whether it came from the server or from here.
 */
const REFRESH_MS = 30_000;

const day = z.object({ date: z.string(), state: z.string(), uptime: z.nullable(z.number()), sampleCount: z.number() });
const statusSchema = z.object({
  overall: z.string(),
  monitored: z.boolean(),
  windowDays: z.number(),
  generatedAt: z.string(),
  components: z.array(
    z.object({
      key: z.string(),
      name: z.string(),
      description: z.string(),
      status: z.string(),
      uptime: z.nullable(z.number()),
      latencyMs: z.number(),
      latencyMeaning: z.string(),
      sampleCount: z.number(),
      checkedAt: z.nullable(z.string()),
      history: z.array(day),
    }),
  ),
});

const main = document.getElementById('status');
const note = document.getElementById('refresh-note');

async function refresh(): Promise<void> {
  try {
    const res = await fetch('/v1/status', { cache: 'no-store', credentials: 'omit' });
    const body = statusSchema.safeParse(await res.json());
    if (!res.ok || !body.success) throw new Error(`status ${res.status}`);
    // The focused bar keeps its place across the redraw (a keyboard user reading the bars is not thrown out).
    const focused = document.activeElement?.getAttribute('aria-label');
    if (main) main.innerHTML = statusMain(body.data);
    if (focused) for (const el of document.querySelectorAll<HTMLElement>('.day')) if (el.getAttribute('aria-label') === focused) el.focus();
    if (note) note.textContent = `Over the last ${body.data.windowDays} days. This page refreshes itself every ${REFRESH_MS / 1000} s.`;
    document.body.dataset.refreshedAt = body.data.generatedAt;
  } catch {
    if (note) note.textContent = 'The status could not be refreshed; it will try again shortly.';
  }
}

if (main) {
  if (note) note.textContent = `This page refreshes itself every ${REFRESH_MS / 1000} s.`;
  void refresh();
  setInterval(refresh, REFRESH_MS);
}
