const FRAME_END = /\r?\n\r?\n/;

/** Splits a byte stream into SSE `data:` payloads; tolerant of CRLF, comments and frames split across chunks. */
export async function* sseData(body: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  let buffer = '';
  for await (const part of body) {
    buffer += typeof part === 'string' ? part : part.toString('utf8');
    for (let cut = buffer.search(FRAME_END); cut !== -1; cut = buffer.search(FRAME_END)) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + (buffer[cut] === '\r' ? 4 : 2));
      const data = frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(l[5] === ' ' ? 6 : 5))
        .join('\n');
      if (data) yield data;
    }
  }
  if (buffer.trim().startsWith('data:')) yield buffer.trim().slice(5).trim();
}
