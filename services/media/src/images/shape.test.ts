import { resolveShape } from '@gateway/pricing';
import { upstreamShape } from './shape';

describe('image shape sent upstream', () => {
  it('tells the upstream a kept size alone, otherwise the halves in force', () => {
    expect(upstreamShape(resolveShape({ size: '1024x1536' }))).toEqual({ size: '1024x1536' });
    expect(upstreamShape(resolveShape({ size: '1024x1024', aspect_ratio: '16:9' }))).toEqual({ aspectRatio: '16:9', resolution: '1024x1024' });
    expect(upstreamShape(resolveShape({ size: '2K' }))).toEqual({ resolution: '2K' });
    expect(upstreamShape(resolveShape({}))).toEqual({});
  });
});
