/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call, callBlob, describe, send } from '../lib/api';
import { byId, fill, h, table } from '../lib/dom';
import { usd, when } from '../lib/format';
import type { Guard } from '../lib/gate';

const job = z.object({
  request_id: z.string(),
  model: z.string(),
  category: z.string(),
  status: z.string(),
  outcome: z.nullable(z.string()),
  cost: z.nullable(z.string()),
  created_at: z.string(),
});
type Job = z.infer<typeof job>;

let blobUrl: string | undefined;

/** Plays a finished video: fetched with the key (a <video src> cannot carry a header) into a blob URL of this page. */
async function play(key: string, id: string): Promise<void> {
  const player = byId('player');
  try {
    const blob = await callBlob(key, `/v1/videos/${encodeURIComponent(id)}/content`);
    if (blobUrl) URL.revokeObjectURL(blobUrl);
    blobUrl = URL.createObjectURL(blob);
    fill(
      player,
      h('p', {}, `Video of ${id} (${Math.ceil(blob.size / 1024)} KB)`),
      h('video', { controls: true, src: blobUrl, 'data-job': id, 'data-bytes': blob.size, preload: 'metadata' }),
    );
  } catch (err) {
    fill(player, h('p', { class: 'error', role: 'alert' }, describe(err)));
  }
}

function actions(key: string, j: Job, reload: () => Promise<void>, guard: Guard) {
  if (j.status !== 'COMPLETED')
    return h(
      'button',
      {
        type: 'button',
        'data-cancel': j.request_id,
        onclick: async (e: Event) => {
          (e.currentTarget as HTMLButtonElement).disabled = true;
          await guard('jobs-error', () => send(key, 'PUT', `/v1/queue/requests/${encodeURIComponent(j.request_id)}/cancel`).then(() => undefined));
          await reload();
        },
      },
      'Cancel',
    );
  if (j.outcome === 'succeeded' && j.category === 'video')
    return h('button', { type: 'button', 'data-play': j.request_id, onclick: () => void play(key, j.request_id) }, 'Play');
  return '';
}

/** The account's newest jobs (GET /v1/jobs): status, cost, a cancel button while unfinished, a player once done. */
export async function loadJobs(key: string, reload: () => Promise<void>, guard: Guard): Promise<void> {
  const rows = (await call(key, 'GET', '/v1/jobs?limit=20', z.object({ data: z.array(job) }))).data;
  fill(
    byId('jobs'),
    table(
      'Jobs, newest first',
      ['Submitted', 'Job', 'Model', 'Status', 'Cost', ''],
      rows.map((j) => [
        when(j.created_at),
        h('code', {}, j.request_id),
        j.model,
        h('span', { 'data-job-status': j.request_id }, j.outcome ? `${j.status} · ${j.outcome}` : j.status),
        j.cost === null ? (j.outcome ? 'settling' : 'held') : usd(j.cost),
        actions(key, j, reload, guard),
      ]),
      'No jobs yet.',
    ),
  );
}
