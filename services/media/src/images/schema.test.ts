import { validate } from '@gateway/service-kit';
import { imagesBody, MAX_HINT_LENGTH, MAX_IMAGES, MAX_PROMPT_CHARACTERS, MAX_REFERENCE_URLS, MAX_URL_LENGTH } from './schema';

const parse = (body: Record<string, unknown>) => validate(imagesBody, { model: 'a/b', prompt: 'a cat', ...body });
const refused = (body: Record<string, unknown>) => expect(() => parse(body)).toThrow(expect.objectContaining({ code: 'invalid_request' }));

describe('images request', () => {
  it("defaults n to 1 and passes every unknown field through as the model's own input", () => {
    const body = parse({ style: 'vivid', seed: 7, negative_prompt: 'dogs', user: 'u1' });
    expect(body).toMatchObject({ model: 'a/b', prompt: 'a cat', n: 1 });
    expect(body.extra).toEqual({ style: 'vivid', seed: 7, negative_prompt: 'dogs', user: 'u1' });
  });

  it('keeps the named fields out of extra, and answers response_format and stream itself', () => {
    const body = parse({ n: 2, size: '1024x1024', quality: 'high', response_format: 'url', stream: false, reference_urls: ['https://x.test/a.png'] });
    expect(body.extra).toEqual({});
    expect(body).toMatchObject({ n: 2, size: '1024x1024', quality: 'high', reference_urls: ['https://x.test/a.png'] });
  });

  it('counts the prompt in characters, not UTF-16 units', () => {
    expect(parse({ prompt: '🐈'.repeat(MAX_PROMPT_CHARACTERS) }).prompt).toHaveLength(2 * MAX_PROMPT_CHARACTERS);
    expect(parse({ prompt: 'x'.repeat(MAX_PROMPT_CHARACTERS) }).prompt).toHaveLength(MAX_PROMPT_CHARACTERS);
  });

  it.each([
    ['no model', { model: undefined }],
    ['no prompt', { prompt: undefined }],
    ['an empty prompt', { prompt: '' }],
    ['a prompt over 32,000 characters', { prompt: 'x'.repeat(MAX_PROMPT_CHARACTERS + 1) }],
    ['a prompt over 32,000 characters of astral symbols', { prompt: '🐈'.repeat(MAX_PROMPT_CHARACTERS + 1) }],
    ['n 0', { n: 0 }],
    ['n above 10', { n: MAX_IMAGES + 1 }],
    ['a fractional n', { n: 1.5 }],
    ['n as a string', { n: '2' }],
    ['an empty size', { size: '' }],
    ['an over-long aspect_ratio', { aspect_ratio: '1'.repeat(MAX_HINT_LENGTH + 1) }],
    ['a numeric resolution', { resolution: 1024 }],
    ['a non-string quality', { quality: ['high'] }],
    ['reference_urls that is not an array', { reference_urls: 'https://x.test/a.png' }],
    ['a reference URL that is not http(s)', { reference_urls: ['ftp://x.test/a.png'] }],
    ['a reference that is not a URL', { reference_urls: ['a.png'] }],
    ['an over-long reference URL', { reference_urls: [`https://x.test/${'a'.repeat(MAX_URL_LENGTH)}`] }],
    ['more than 16 reference URLs', { reference_urls: Array.from({ length: MAX_REFERENCE_URLS + 1 }, (_, i) => `https://x.test/${i}.png`) }],
    ['response_format b64_json', { response_format: 'b64_json' }],
    ['stream true', { stream: true }],
  ])('refuses %s with 400 invalid_request', (_name, body) => {
    refused(body);
  });

  it('names the field that broke a bound', () => {
    expect(() => parse({ n: 11 })).toThrow(/n: /);
    expect(() => parse({ reference_urls: ['ftp://x'] })).toThrow(/reference_urls\.0: must be an http\(s\) URL/);
    expect(() => parse({ response_format: 'b64_json' })).toThrow(/response_format: only "url"/);
  });
});
