import { characterCount } from '@gateway/pricing';
import { MAX_INPUT_CHARACTERS, speechBody } from './schema';

describe('speech body', () => {
  const ok = { model: 'acme/tts', input: 'Hello' };

  it('fills the defaults: voice alloy, mp3, speed 1', () => {
    expect(speechBody.parse(ok)).toEqual({ ...ok, voice: 'alloy', response_format: 'mp3', speed: 1 });
  });

  it('takes any voice name, since providers name their own', () => {
    expect(speechBody.parse({ ...ok, voice: 'my-cloned-voice-42' }).voice).toBe('my-cloned-voice-42');
  });

  it.each([
    ['no model', { input: 'x' }],
    ['no input', { model: 'acme/tts' }],
    ['an empty input', { ...ok, input: '' }],
    ['an input over 4096 characters', { ...ok, input: 'a'.repeat(MAX_INPUT_CHARACTERS + 1) }],
    ['an unknown format', { ...ok, response_format: 'ogg' }],
    ['speed below 0.25', { ...ok, speed: 0.2 }],
    ['speed above 4', { ...ok, speed: 4.01 }],
    ['an empty voice', { ...ok, voice: '' }],
  ])('refuses %s', (_why, body) => {
    expect(speechBody.safeParse(body).success).toBe(false);
  });

  it.each([0.25, 4])('accepts speed %s, the bounds themselves', (speed) => {
    expect(speechBody.parse({ ...ok, speed }).speed).toBe(speed);
  });

  it('counts characters as code points: 4096 emoji fit, though JavaScript sees 8192 units', () => {
    const emoji = '🎙'.repeat(MAX_INPUT_CHARACTERS);
    expect(emoji.length).toBe(2 * MAX_INPUT_CHARACTERS);
    expect(characterCount(emoji)).toBe(MAX_INPUT_CHARACTERS);
    expect(speechBody.safeParse({ ...ok, input: emoji }).success).toBe(true);
    expect(speechBody.safeParse({ ...ok, input: `${emoji}a` }).success).toBe(false);
  });

  it('drops unknown fields instead of forwarding them', () => {
    expect(speechBody.parse({ ...ok, instructions: 'whisper' })).not.toHaveProperty('instructions');
  });
});
