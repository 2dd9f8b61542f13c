import { createOpenAIProtocol } from '.';
import type { ImageRequest } from '../types';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream } from '../testing/fake-upstream';
import { readImages } from './images';
import { openAISize } from './image-size';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([4, 0, 0, 0]), Buffer.from('WEBPVP8 ')]);

describe('openai image generations', () => {
  let fake: FakeUpstream;
  let answer: unknown;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => json(res, 200, answer));
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.hits.splice(0));

  const protocol = createOpenAIProtocol(FAKE_ENV);
  const generate = (req: ImageRequest) => protocol.generateImages(endpointAt(fake.baseUrl), req, callOptions());

  it('posts the upstream model and the named fields to /images/generations with the key; extra fields pass through but never override them', async () => {
    answer = { data: [{ url: 'https://cdn.example/a.png' }] };
    await generate({
      prompt: 'a fox',
      n: 2,
      size: '1024x1024',
      quality: 'high',
      aspectRatio: '1:1',
      resolution: '1K',
      referenceUrls: ['https://ref.example/r.png'],
      extra: { model: 'client-choice', prompt: 'other', style: 'vivid' },
    });
    const [hit] = fake.hits;
    expect(hit.path).toBe('/v1/images/generations');
    expect(hit.headers.authorization).toBe('Bearer sk-fake');
    expect(JSON.parse(hit.body.toString())).toEqual({
      model: 'up-model',
      prompt: 'a fox',
      n: 2,
      size: '1024x1024',
      quality: 'high',
      aspect_ratio: '1:1',
      resolution: '1K',
      reference_urls: ['https://ref.example/r.png'],
      style: 'vivid',
    });
  });

  it('sends the OpenAI size mapped from aspect_ratio when the route gave no size, and no size when nothing maps', async () => {
    answer = { data: [{ url: 'https://cdn.example/a.png' }] };
    await generate({ prompt: 'p', n: 1, aspectRatio: '16:9' });
    await generate({ prompt: 'p', n: 1, resolution: '4K' });
    expect(JSON.parse(fake.hits[0].body.toString())).toMatchObject({ size: '1536x1024', aspect_ratio: '16:9' });
    expect(JSON.parse(fake.hits[1].body.toString())).not.toHaveProperty('size');
  });

  it('answers URL answers as URLs', async () => {
    answer = { data: [{ url: 'https://cdn.example/a.png' }, { url: 'http://cdn.example/b.png' }] };
    expect(await generate({ prompt: 'p', n: 2 })).toEqual({
      images: [
        { kind: 'url', url: 'https://cdn.example/a.png' },
        { kind: 'url', url: 'http://cdn.example/b.png' },
      ],
    });
  });

  it('decodes b64_json answers to bytes typed by their magic bytes (PNG, JPEG, WEBP), whatever the label says', async () => {
    answer = { output_format: 'png', data: [PNG, JPEG, WEBP].map((b) => ({ b64_json: b.toString('base64') })) };
    const { images } = await generate({ prompt: 'p', n: 3 });
    expect(images).toEqual([
      { kind: 'bytes', bytes: PNG, contentType: 'image/png' },
      { kind: 'bytes', bytes: JPEG, contentType: 'image/jpeg' },
      { kind: 'bytes', bytes: WEBP, contentType: 'image/webp' },
    ]);
  });
});

describe('openai image answer', () => {
  const unknownBytes = Buffer.from('not an image signature');

  it('types bytes no signature identifies by the data: URL label, then output_format, then image/png', () => {
    const b64 = unknownBytes.toString('base64');
    expect(readImages({ data: [{ b64_json: `data:image/avif;base64,${b64}` }] }, 1).images[0]).toMatchObject({ contentType: 'image/avif' });
    expect(readImages({ output_format: 'jpg', data: [{ b64_json: b64 }] }, 1).images[0]).toMatchObject({ contentType: 'image/jpeg' });
    expect(readImages({ data: [{ b64_json: b64 }] }, 1).images[0]).toEqual({ kind: 'bytes', bytes: unknownBytes, contentType: 'image/png' });
  });

  it('takes a base64 data: URL in `url` as bytes, not as a link', () => {
    expect(readImages({ data: [{ url: `data:image/png;base64,${PNG.toString('base64')}` }] }, 1).images[0]).toEqual({
      kind: 'bytes',
      bytes: PNG,
      contentType: 'image/png',
    });
  });

  it('cuts an answer of more images than asked for to n (the hold covers n)', () => {
    expect(readImages({ data: [{ url: 'https://a' }, { url: 'https://b' }, { url: 'https://c' }] }, 2).images).toHaveLength(2);
  });

  it.each([
    ['no data', {}],
    ['an empty list', { data: [] }],
    ['an item with neither url nor b64_json', { data: [{ revised_prompt: 'x' }] }],
    ['a url that is not http(s)', { data: [{ url: 'file:///etc/passwd' }] }],
    ['empty base64', { data: [{ b64_json: '' }] }],
  ])('treats %s as a protocol failure (fails over)', (_name, answer) => {
    expect(() => readImages(answer, 1)).toThrow(expect.objectContaining({ kind: 'protocol', clientFault: false }));
  });
});

describe('OpenAI size from aspect_ratio and resolution', () => {
  it.each([
    [undefined, undefined, undefined],
    ['1:1', undefined, '1024x1024'],
    ['16:9', undefined, '1536x1024'],
    ['3:2', '1K', '1536x1024'],
    ['9:16', undefined, '1024x1536'],
    ['4:5', undefined, '1024x1536'],
    ['5:4', undefined, '1536x1024'],
    [undefined, '1K', '1024x1024'],
    ['16:9', '1792x1024', '1792x1024'],
    ['16:9', '2K', undefined],
    [undefined, '4k', undefined],
    ['wide', undefined, undefined],
    ['0:1', undefined, undefined],
  ])('aspect_ratio %s with resolution %s maps to %s', (ratio, resolution, size) => {
    expect(openAISize(ratio, resolution)).toBe(size);
  });
});
