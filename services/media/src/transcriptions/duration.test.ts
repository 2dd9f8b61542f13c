import fs from 'node:fs';
import path from 'node:path';
import { wavHeader } from '@gateway/upstreams/testing';
import { measureSeconds } from './duration';
import type { AudioFormat } from './schema';

/** `seconds` of 16-bit PCM silence as a WAV file, its header as the simulated upstream writes it. */
function wav(seconds: number, sampleRate = 8000, channels = 1): Buffer {
  const data = Buffer.alloc(Math.round(seconds * sampleRate) * channels * 2);
  return Buffer.concat([wavHeader(sampleRate, channels, data.length), data]);
}

/**
 * 1.5 s of silence in each other container, made once with ffmpeg 5.1 (8 kHz mono, no metadata):
 *   ffmpeg -f lavfi -i anullsrc=r=8000:cl=mono -t 1.5 -c:a <codec> -map_metadata -1 -fflags +bitexact silence-1.5s.<ext>
 * with libmp3lame 8k, libvorbis q0, flac, aac 8k, libopus 6k; no-duration.webm adds `-live 1`, which leaves the
 * duration out of the header as browsers' MediaRecorder does. The durations are what ffprobe reports for them.
 */
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, 'fixtures', name));

describe('measuring uploaded audio', () => {
  it.each([
    [2, 8000, 1],
    [0.25, 16000, 2],
    [61.5, 8000, 1],
  ])('reads %s s from a WAV header (%i Hz, %i channels)', async (seconds, rate, channels) => {
    expect(await measureSeconds(wav(seconds, rate, channels), 'wav')).toBeCloseTo(seconds, 6);
  });

  it.each([
    ['mp3', 1.656],
    ['ogg', 1.5],
    ['flac', 1.5],
    // music-metadata counts the AAC encoder's priming samples, which ffprobe's 1.5 s leaves out.
    ['m4a', 1.628],
    ['webm', 1.508],
  ] as Array<[AudioFormat, number]>)('reads the duration of a %s file', async (format, seconds) => {
    expect(await measureSeconds(fixture(`silence-1.5s.${format}`), format)).toBeCloseTo(seconds, 2);
  });

  it('refuses audio whose bytes are not the container named, saying which', async () => {
    await expect(measureSeconds(fixture('silence-1.5s.flac'), 'mp3')).rejects.toThrow(/the data is not mp3 audio/);
    await expect(measureSeconds(wav(1), 'ogg')).rejects.toThrow(/the data is not ogg audio/);
    await expect(measureSeconds(Buffer.from('not audio at all'), 'wav')).rejects.toThrow(/the data is not wav audio/);
  });

  it('refuses audio its parser cannot decode, with the reason', async () => {
    const brokenTag = Buffer.concat([Buffer.from('ID3'), Buffer.alloc(50, 0xff)]);
    await expect(measureSeconds(brokenTag, 'mp3')).rejects.toThrow(/the mp3 audio could not be decoded \(ID3v2 tag size/);
  });

  it.each([
    ['a WebM recording without a duration in its header', () => fixture('no-duration.webm'), 'webm'],
    ['a header with nothing after it', () => fixture('silence-1.5s.m4a').subarray(0, 40), 'm4a'],
    ['a WAV file of no samples', () => wav(0), 'wav'],
  ] as Array<[string, () => Buffer, AudioFormat]>)('refuses %s: no duration can be read', async (_why, audio, format) => {
    await expect(measureSeconds(audio(), format)).rejects.toThrow(`no duration could be read from this ${format} audio`);
  });

  it('answers 400 invalid_request', async () => {
    await expect(measureSeconds(Buffer.alloc(0), 'flac')).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
  });
});
