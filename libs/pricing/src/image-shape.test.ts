import { resolveShape } from './image-shape';

describe('image shape precedence', () => {
  it.each([
    ['dimensions set both halves and travel as the size', { size: '1792x1024' }, { aspectRatio: '7:4', resolution: '1792x1024', size: '1792x1024' }],
    ['a ratio sets the ratio half only', { size: '16:9' }, { aspectRatio: '16:9' }],
    ['a tier sets the resolution half only', { size: '2k' }, { resolution: '2K' }],
    [
      'aspect_ratio wins over the ratio half of dimensions',
      { size: '1024x1024', aspect_ratio: '16:9' },
      { aspectRatio: '16:9', resolution: '1024x1024' },
    ],
    ['resolution wins over the resolution half of dimensions', { size: '1024x1024', resolution: '4K' }, { aspectRatio: '1:1', resolution: '4K' }],
    ['a ratio size and a resolution combine', { size: '9:16', resolution: '2K' }, { aspectRatio: '9:16', resolution: '2K' }],
    ['a tier size and an aspect_ratio combine', { size: '4K', aspect_ratio: '21:9' }, { aspectRatio: '21:9', resolution: '4K' }],
    ['aspect_ratio wins over a ratio size', { size: '16:9', aspect_ratio: '1:1' }, { aspectRatio: '1:1' }],
    ['resolution wins over a tier size', { size: '1K', resolution: '2K' }, { resolution: '2K' }],
    ['a size the gateway does not read travels alone', { size: 'auto' }, { size: 'auto' }],
    ['a size the gateway does not read gives way to either field', { size: 'auto', resolution: '2K' }, { resolution: '2K' }],
    ['nothing stated leaves everything to the model', {}, {}],
  ])('%s', (_rule, fields, shape) => {
    expect(resolveShape(fields)).toEqual(shape);
  });
});
