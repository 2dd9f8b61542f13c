import type http from 'node:http';
import type { ReceivedFile } from './fake-server';

/** The bytes the fake "speaks" for an input, in the pieces it sends them: a test can compare them exactly. */
export function fakeSpeechPieces(input: string): string[] {
  return ['AUDIO[', input, ']'];
}

const SPEECH_TYPE: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** Speech answers held after their first piece until the test lets them go (or the gateway hangs up), by input. */
const held = new Map<string, () => void>();
const finished = new Set<string>();

/** Lets the held speech answer for `input` send the rest; false when none is held. */
export function releaseSpeech(input: string): boolean {
  const release = held.get(input);
  held.delete(input);
  release?.();
  return release !== undefined;
}

/** Whether the fake has sent the whole answer for `input`. */
export function speechFinished(input: string): boolean {
  return finished.has(input);
}

/**
 * POST /v1/audio/speech, by upstream model:
 *   speech-ok          fakeSpeechPieces(input) as three chunks, content type of the format asked
 *   speech-held        the first piece, then the rest only once releaseSpeech(input) (streaming is observable)
 *   speech-break       the first two pieces, then the socket is destroyed
 *   speech-die         the 200 head, then the socket is destroyed before any byte
 *   status-<code>      that HTTP status with an OpenAI-style error body
 * A held answer also ends, without the rest, when the gateway hangs up.
 */
export async function fakeSpeech(req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, any>, model: string): Promise<void> {
  if (status(res, model)) return;
  const input = String(body.input);
  const pieces = fakeSpeechPieces(input);
  res.writeHead(200, { 'content-type': SPEECH_TYPE[body.response_format] ?? 'application/octet-stream' });
  res.flushHeaders();
  if (model === 'speech-die') return void req.socket.destroy();
  if (model === 'speech-break') {
    res.write(pieces[0]);
    res.write(pieces[1]);
    // Once the pieces are on their way: a cut before they leave would be a failure before the first byte.
    return void setImmediate(() => req.socket.destroy());
  }
  if (model === 'speech-held') {
    const released = new Promise<void>((resolve) => {
      held.set(input, resolve);
      res.once('close', () => resolve());
    });
    res.write(pieces[0]);
    await released;
    if (res.destroyed) return;
    for (const p of pieces.slice(1)) res.write(p);
    finished.add(input);
    return void res.end();
  }
  for (const p of pieces) res.write(p);
  finished.add(input);
  res.end();
}

/** The seconds the fake reports for an upload when asked to: a fixed figure, so a test knows what is charged. */
export const FAKE_REPORTED_SECONDS = 2.2;

/**
 * POST /v1/audio/transcriptions (multipart, as OpenAI takes it), by upstream model:
 *   stt-ok             every response format; only verbose_json reports a duration (FAKE_REPORTED_SECONDS)
 *   stt-json-seconds   json with OpenAI's `usage: {type: 'duration', seconds}` (FAKE_REPORTED_SECONDS)
 *   status-<code>      that HTTP status with an OpenAI-style error body
 * The text is `heard <n> bytes of <file name>`; subtitle formats wrap it in one cue. Content types differ per format
 * (srt as application/x-subrip), so a test can see that the gateway passes them on verbatim.
 */
export function fakeTranscription(res: http.ServerResponse, body: Record<string, any>, model: string): void {
  if (status(res, model)) return;
  const file = body.file as ReceivedFile;
  const [type, payload] = transcript(model, String(body.response_format ?? 'json'), `heard ${file.bytes.length} bytes of ${file.name}`, body);
  res.writeHead(200, { 'content-type': type });
  res.end(payload);
}

/** The content type and body of the fake's answer. */
function transcript(model: string, format: string, text: string, body: Record<string, any>): [string, string] {
  if (model === 'stt-json-seconds')
    return ['application/json', JSON.stringify({ text, usage: { type: 'duration', seconds: FAKE_REPORTED_SECONDS } })];
  switch (format) {
    case 'text':
      return ['text/plain; charset=utf-8', `${text}\n`];
    case 'srt':
      return ['application/x-subrip; charset=utf-8', `1\n00:00:00,000 --> 00:00:02,200\n${text}\n\n`];
    case 'vtt':
      return ['text/vtt; charset=utf-8', `WEBVTT\n\n00:00:00.000 --> 00:00:02.200\n${text}\n\n`];
    case 'verbose_json': {
      const granularities: string[] = body.timestamp_granularities ?? [];
      const words = granularities.includes('word') ? { words: [{ word: 'heard', start: 0, end: 0.4 }] } : {};
      return [
        'application/json',
        JSON.stringify({ task: 'transcribe', language: body.language ?? 'english', duration: FAKE_REPORTED_SECONDS, text, ...words }),
      ];
    }
    default:
      return ['application/json', JSON.stringify({ text })];
  }
}

function status(res: http.ServerResponse, model: string): boolean {
  const code = /^status-(\d+)$/.exec(model);
  if (!code) return false;
  res.writeHead(Number(code[1]), { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `fake upstream says ${code[1]}`, type: 'fake' } }));
  return true;
}
