const FRAME_END = /\r?\n\r?\n/;

/** Splits a byte stream into SSE `data:` payloads; tolerant of CRLF, comments and frames split across chunks. */
export async function* sseData(body: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  let buffer = '';
  for await (const part of body) {
    buffer += typeof part === 'string' ? part : part.toString('utf8');
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
  if (buffer.trim().startsWith('data:')) yield buffer.trim().slice(5).trim();
}
