import type { ResolvedEndpoint } from '@gateway/config';
import { createSimulatedQueue, silentMp4 } from '@gateway/upstreams';
import type { QueueProtocol } from '@gateway/upstreams';
import type { MediaFilesPort } from '../media/port';
import { collectMedia } from './collect-media';

describe('collecting a result’s media', () => {
  const kept: Array<{ bytes: number; contentType: string }> = [];
  const media: MediaFilesPort = {
    keep: async (_owner, bytes, contentType) => {
      kept.push({ bytes: bytes.length, contentType });
      return { id: `file_${kept.length}` };
    },
    serve: async () => undefined,
  };
  const downloads: string[] = [];
  const protocol = {
    ...createSimulatedQueue(),
    download: async (_ep: ResolvedEndpoint, url: string) => {
      downloads.push(url);
      if (url.endsWith('.png')) return { bytes: Buffer.from('png'), contentType: 'image/png' };
      return { bytes: silentMp4(url.includes('long') ? 4 : 2), contentType: 'application/octet-stream' };
    },
  } as QueueProtocol;
  const deps = { protocol, endpoint: {} as ResolvedEndpoint, media, publicUrl: 'https://gw.example', signal: new AbortController().signal };
  beforeEach(() => {
    kept.length = 0;
    downloads.length = 0;
  });

  it('rewrites every file URL to the gateway’s, keeps one file linked twice once, and bills each video once', async () => {
    const result = {
      video: { url: 'https://cdn.up/a.mp4', content_type: 'video/mp4' },
      videos: [{ url: 'https://cdn.up/a.mp4', content_type: 'video/mp4' }, { url: 'https://cdn.up/long.mp4' }],
      thumbnail: { url: 'https://cdn.up/t.png', content_type: 'image/png' },
      seed: 7,
    };
    const out = await collectMedia(result, deps, { accountId: 'acct_1', requestId: 'req_1' });
    expect(downloads.sort()).toEqual(['https://cdn.up/a.mp4', 'https://cdn.up/long.mp4', 'https://cdn.up/t.png']);
    expect(out.videos).toBe(2);
    expect(out.measuredMillis).toBe(6000n);
    expect(out.videoFileId).toBe((out.payload.video as { url: string }).url.split('/').pop());
    expect(JSON.stringify(out.payload)).not.toContain('cdn.up');
    expect((out.payload.videos as Array<{ url: string }>)[0].url).toBe((out.payload.video as { url: string }).url);
    expect(out.payload.seed).toBe(7);
    // A video the CDN called octet-stream is kept as video/mp4: the content route promises it.
    expect(kept.filter((k) => k.contentType === 'video/mp4')).toHaveLength(2);
  });

  it('a result without videos bills on nothing measured', async () => {
    const out = await collectMedia({ caption: 'no files' }, deps, { accountId: 'acct_1', requestId: 'req_1' });
    expect(out).toEqual({ payload: { caption: 'no files' }, videoFileId: null, measuredMillis: null, videos: 0 });
  });
});
