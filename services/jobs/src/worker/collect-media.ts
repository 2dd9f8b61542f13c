import type { ResolvedEndpoint } from '@gateway/config';
import type { QueueProtocol } from '@gateway/upstreams';
import type { MediaFilesPort } from '../media/port';

type MusicMetadata = typeof import('music-metadata');
let loading: Promise<MusicMetadata> | undefined;
/** ESM only: import() keeps working from this CommonJS code under tsx and jest (see the media service's duration.ts). */
const musicMetadata = (): Promise<MusicMetadata> => (loading ??= import('music-metadata'));

export interface CollectedMedia {
  /** The result with every file URL replaced by the gateway's own /v1/files URL. */
  payload: Record<string, unknown>;
  /** The first video of the result: what /v1/videos/{id}/content streams. */
  videoFileId: string | null;
  /** Milliseconds of video measured in the files themselves, summed; null when some video could not be measured. */
  measuredMillis: bigint | null;
  videos: number;
}

interface FileObject {
  url: string;
  content_type?: string;
  [k: string]: unknown;
}

const isFileObject = (v: unknown): v is FileObject =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  typeof (v as FileObject).url === 'string' &&
  /^(https?|simulated):/.test((v as FileObject).url);
const isVideo = (f: FileObject, type: string) => type.startsWith('video/') || /\.(mp4|webm|mov)(\?|$)/i.test(f.url);

/**
 * Every file the upstream's result links to (fal's `{url, content_type, ...}` objects, wherever they sit) is fetched
 * and kept in the media store; the result keeps its shape with the gateway's URL in place of the upstream's, which
 * never reaches the client. Videos are measured, since the bill is on the seconds actually delivered.
 */
export async function collectMedia(
  result: Record<string, unknown>,
  deps: { protocol: QueueProtocol; endpoint: ResolvedEndpoint; media: MediaFilesPort; publicUrl: string; signal: AbortSignal },
  owner: { accountId: string; requestId: string },
): Promise<CollectedMedia> {
  let videoFileId: string | null = null;
  let measured: bigint | null = 0n;
  let videos = 0;
  // One upstream file may be linked twice (fal's `video` beside `videos[0]`): fetched, kept and billed once.
  const keptByUrl = new Map<string, Promise<Record<string, unknown>>>();

  async function visit(value: unknown): Promise<unknown> {
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const v of value) out.push(await visit(v));
      return out;
    }
    if (typeof value !== 'object' || value === null) return value;
    if (isFileObject(value)) {
      let kept = keptByUrl.get(value.url);
      if (!kept) {
        kept = keep(value);
        keptByUrl.set(value.url, kept);
      }
      return { ...value, ...(await kept) };
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await visit(v);
    return out;
  }

  async function keep(value: FileObject): Promise<Record<string, unknown>> {
    const file = await deps.protocol.download(deps.endpoint, value.url, { signal: deps.signal });
    const declared = value.content_type ?? file.contentType;
    const video = isVideo(value, declared);
    // Upstream CDNs often say octet-stream; the content route promises video/mp4, so a video is stored as one.
    const contentType = video && !declared.startsWith('video/') ? 'video/mp4' : declared;
    const kept = await deps.media.keep(owner, file.bytes, contentType);
    if (video) {
      videos += 1;
      videoFileId ??= kept.id;
      const seconds = await videoSeconds(file.bytes, contentType);
      measured = seconds === null || measured === null ? null : measured + BigInt(Math.round(seconds * 1000));
    }
    return { url: `${deps.publicUrl}/v1/files/${kept.id}`, content_type: contentType, file_size: file.bytes.length };
  }

  const payload = (await visit(result)) as Record<string, unknown>;
  return { payload, videoFileId, measuredMillis: videos > 0 ? measured : null, videos };
}

async function videoSeconds(bytes: Buffer, contentType: string): Promise<number | null> {
  try {
    const { parseBuffer } = await musicMetadata();
    const meta = await parseBuffer(bytes, { mimeType: contentType, size: bytes.length }, { duration: true, skipCovers: true });
    const d = meta.format.duration;
    return typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : null;
  } catch {
    return null;
  }
}
