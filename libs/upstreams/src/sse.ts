import { StringDecoder } from 'node:string_decoder';

const FRAME_END = /\r?\n\r?\n/;

/**
 * Splits a byte stream into SSE `data:` payloads; tolerant of CRLF, comments, frames split across chunks and
 * characters split across chunks (a multi-byte UTF-8 character is decoded once whole, never as two U+FFFD).
 */
export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** Hands `emit` each payload that `part` completes, in order. */
  write(part: Buffer | string, emit: (data: string) => void): void {
    this.buffer += typeof part === 'string' ? part : this.decoder.write(part);
    for (let end = FRAME_END.exec(this.buffer); end; end = FRAME_END.exec(this.buffer)) {
      const frame = this.buffer.slice(0, end.index);
      // The separator's own length: mixed endings (`\n\r\n`, `\r\n\n`) are 3 characters, not 2 or 4.
      this.buffer = this.buffer.slice(end.index + end[0].length);
      const data = frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(l[5] === ' ' ? 6 : 5))
        .join('\n');
      if (data) emit(data);
    }
  }

  /** At the body's end: a last frame the upstream ended without its blank line. */
  end(emit: (data: string) => void): void {
    const rest = (this.buffer + this.decoder.end()).trim();
    this.buffer = '';
    if (rest.startsWith('data:')) emit(rest.slice(5).trim());
  }
}
