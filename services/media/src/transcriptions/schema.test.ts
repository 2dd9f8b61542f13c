import { transcriptionBody } from './schema';

describe('transcription body', () => {
  const ok = { model: 'acme/stt', input_audio: { data: 'UklGRg==', format: 'wav' } };

  it('fills the default format, json', () => {
    expect(transcriptionBody.parse(ok)).toEqual({ ...ok, response_format: 'json' });
  });

  it('reads the container name case-insensitively', () => {
    expect(transcriptionBody.parse({ ...ok, input_audio: { data: 'x', format: ' MP3 ' } }).input_audio.format).toBe('mp3');
  });

  it('takes timestamp_granularities with verbose_json', () => {
    const body = transcriptionBody.parse({ ...ok, response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
    expect(body.timestamp_granularities).toEqual(['word', 'segment']);
  });

  it.each([
    ['no model', { input_audio: ok.input_audio }],
    ['no input_audio', { model: 'acme/stt' }],
    ['empty data', { ...ok, input_audio: { data: '', format: 'wav' } }],
    ['no format', { ...ok, input_audio: { data: 'x' } }],
    ['a container the gateway cannot measure', { ...ok, input_audio: { data: 'x', format: 'aiff' } }],
    ['a three-letter language', { ...ok, language: 'eng' }],
    ['an upper-case language', { ...ok, language: 'EN' }],
    ['an unknown response_format', { ...ok, response_format: 'xml' }],
    ['an unknown granularity', { ...ok, response_format: 'verbose_json', timestamp_granularities: ['sentence'] }],
  ])('refuses %s', (_why, body) => {
    expect(transcriptionBody.safeParse(body).success).toBe(false);
  });

  it.each(['json', 'text', 'srt', 'vtt'])('refuses timestamp_granularities with %s, naming the field and why', (format) => {
    const r = transcriptionBody.safeParse({ ...ok, response_format: format, timestamp_granularities: ['word'] });
    expect(r.success).toBe(false);
    expect(r.error?.issues).toEqual([expect.objectContaining({ path: ['timestamp_granularities'], message: expect.stringMatching(/verbose_json/) })]);
  });
});
