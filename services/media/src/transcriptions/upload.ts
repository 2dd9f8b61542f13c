import type { Request } from 'express';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { GatewayError } from '@gateway/errors';

/** A multipart transcription upload, read whole: its text fields and its one file. */
export interface Upload {
  /** Each field's values in order; `name[]` (how the openai client sends an array) is filed under `name`. */
  fields: Map<string, string[]>;
  file?: { field: string; filename: string; mimeType: string; data: Buffer };
}

/** The config's body size ("35mb", "512kb", "65536b"; its schema allows no other form) in bytes, as body-parser reads it. */
export function bodyBytes(size: string): number {
  const m = /^(\d+)(b|kb|mb)$/i.exec(size);
  if (!m) throw new Error(`not a body size: ${size}`);
  return Number(m[1]) * { b: 1, kb: 1024, mb: 1024 * 1024 }[m[2].toLowerCase() as 'b' | 'kb' | 'mb'];
}

/**
 * Refuses once the rest of the body has been read and dropped, as body-parser does: a refusal answered while the
 * client (or the fleet's edge) is still sending leaves that connection mid-request, and the next one on it stalls.
 */
function afterBody(req: Request, reject: (err: GatewayError) => void, err: GatewayError): void {
  if (req.complete || req.destroyed) {
    reject(err);
    return;
  }
  const done = () => reject(err);
  req.once('end', done);
  req.once('close', done);
  req.resume();
}

const tooLarge = (maxBytes: number) =>
  new GatewayError('invalid_request', `Request body is too large: the upload may hold at most ${maxBytes} bytes`, { status: 413 });
const unreadable = (why: string) => new GatewayError('invalid_request', `The multipart upload could not be read: ${why}`);

/**
 * Reads a `multipart/form-data` body (the official openai client's `audio.transcriptions.create({ file })`) within
 * `maxBytes`, the limit the JSON body of the route has: the file in memory (its duration is measured before the
 * hold, and the upstream call may be retried on another endpoint), the fields as text. Bounded everywhere: one file,
 * 32 fields of at most 4 KB, 64 parts, so a hostile upload costs no more than a JSON body would. Every refusal is
 * 400 `invalid_request` (413 for size), raised before anything is held.
 */
export function readUpload(req: Request, maxBytes: number): Promise<Upload> {
  const declared = Number(req.headers['content-length']);
  if (declared > maxBytes) return new Promise<Upload>((_, reject) => afterBody(req, reject, tooLarge(maxBytes)));
  return new Promise<Upload>((resolve, reject) => {
    const fields = new Map<string, string[]>();
    let file: Upload['file'];
    let received = 0;
    let done = false;
    let pending: Promise<void> = Promise.resolve();
    const fail = (err: GatewayError) => {
      if (done) return;
      done = true;
      req.unpipe(parser);
      afterBody(req, reject, err);
    };
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({
        headers: req.headers as { 'content-type': string },
        limits: { fileSize: maxBytes, files: 1, fields: 32, fieldSize: 4096, parts: 64, headerPairs: 20 },
      });
    } catch (e) {
      return reject(unreadable((e as Error).message));
    }
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) fail(tooLarge(maxBytes));
    });
    parser.on('field', (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      if (valueTruncated) return fail(unreadable(`field ${name} is longer than 4096 characters`));
      const key = name.endsWith('[]') ? name.slice(0, -2) : name;
      fields.set(key, [...(fields.get(key) ?? []), value]);
    });
    parser.on('file', (field: string, stream: BusboyFileStream, filename: string, _encoding: string, mimeType: string) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => fail(tooLarge(maxBytes)));
      pending = new Promise<void>((settle) => {
        stream.on('end', () => {
          file = { field, filename: filename ?? '', mimeType: mimeType ?? '', data: Buffer.concat(chunks) };
          settle();
        });
        stream.on('error', () => settle());
      });
    });
    parser.on('filesLimit', () => fail(unreadable('it holds more than one file')));
    parser.on('fieldsLimit', () => fail(unreadable('it holds more than 32 fields')));
    parser.on('partsLimit', () => fail(unreadable('it holds more than 64 parts')));
    parser.on('error', (e: unknown) => fail(unreadable(e instanceof Error ? e.message : String(e))));
    parser.on('finish', () => {
      void pending.then(() => {
        if (done) return;
        done = true;
        resolve({ fields, file });
      });
    });
    req.on('aborted', () => fail(unreadable('the client went away mid-body')));
    req.pipe(parser);
  });
}
