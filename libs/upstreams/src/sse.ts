import { StringDecoder } from 'node:string_decoder';

const FRAME_END = /\r?\n\r?\n/;

/** A response body as undici gives it; a plain async iterable (tests) has neither method. */
export interface SseBody extends AsyncIterable<Buffer | string> {
  iterator?(options: { destroyOnReturn: boolean }): AsyncIterable<Buffer | string>;
  dump?(): Promise<unknown>;
}

/**
 * Splits a byte stream into SSE `data:` payloads; tolerant of CRLF, comments, frames split across chunks and
 * characters split across chunks (a multi-byte UTF-8 character is decoded once whole, never as two U+FFFD).
 *
 * A consumer that stops early (at `[DONE]`, which comes before the body's end; at a malformed frame) leaves the
 * rest of the body to be read and dropped, not destroyed: destroying it aborted the upstream request with an
 * AbortError whose stack trace alone was about 2.5 % of a streamed request's CPU, and a connection whose answer
 * is not read to its end cannot go back to the pool.
 */
export async function* sseData(body: SseBody): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let buffer = '';
  let readToEnd = false;
  try {
    for await (const part of body.iterator ? body.iterator({ destroyOnReturn: false }) : body) {
      buffer += typeof part === 'string' ? part : decoder.write(part);
      for (let end = FRAME_END.exec(buffer); end; end = FRAME_END.exec(buffer)) {
        const frame = buffer.slice(0, end.index);
        // The separator's own length: mixed endings (`\n\r\n`, `\r\n\n`) are 3 characters, not 2 or 4.
        buffer = buffer.slice(end.index + end[0].length);
        const data = frame
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(l[5] === ' ' ? 6 : 5))
          .join('\n');
        if (data) yield data;
      }
    }
    readToEnd = true;
  } finally {
    // An error of the body itself has destroyed it already (dump then resolves at once).
    if (!readToEnd) body.dump?.().catch(() => {});
  }
  buffer += decoder.end();
  if (buffer.trim().startsWith('data:')) yield buffer.trim().slice(5).trim();
}
