import { buildRegistry, parseConfig, type ResolvedModel } from '@gateway/config';
import { imageCharge, imageRate, imageWorstCase } from './image';

/** An image model through the real config schema, priced as `pricing` says. */
function model(pricing: Record<string, unknown>): ResolvedModel {
  const config = parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [{ id: 't/img', name: 'img', category: 'image', status: 'available', pricing, endpoints: [{ provider: 'sim', model: 'i' }] }],
  });
  return buildRegistry(config).get('t/img')!;
}

// Nano-USD: 0.04 USD is 40,000,000.
const keyed = model({ image: '0.04', image_by_resolution: { '2K': '0.08', '4K': '0.16', '1K': '0.02' } });
const flat = model({ image: '0.04' });

describe('image pricing', () => {
  it('rates a listed resolution by its own rate, whatever its case or spacing, and any other by pricing.image', () => {
    expect(imageCharge(keyed, 1, '2K')).toBe(80_000_000n);
    expect(imageCharge(keyed, 1, '2k')).toBe(80_000_000n);
    expect(imageCharge(keyed, 1, '1K')).toBe(20_000_000n);
    expect(imageCharge(keyed, 1, '1024x1024')).toBe(40_000_000n);
    expect(imageRate(keyed, undefined)).toBe(keyed.rates.image);
  });

  it('holds n images at the rate of the resolution asked', () => {
    expect(imageWorstCase(keyed, 3, '2K')).toBe(240_000_000n);
    expect(imageWorstCase(keyed, 3, '1K')).toBe(60_000_000n);
    expect(imageWorstCase(flat, 10, '4K')).toBe(400_000_000n);
  });

  it('holds at the dearest rate when no resolution is asked, and charges pricing.image for what came', () => {
    expect(imageWorstCase(keyed, 2, undefined)).toBe(2n * 160_000_000n);
    expect(imageCharge(keyed, 2, undefined)).toBe(2n * 40_000_000n);
    expect(imageWorstCase(flat, 2, undefined)).toBe(80_000_000n);
  });

  it('charges only the images returned when the upstream made fewer than n', () => {
    const held = imageWorstCase(keyed, 4, '2K');
    expect(imageCharge(keyed, 1, '2K')).toBe(80_000_000n);
    expect(imageCharge(keyed, 1, '2K') * 4n).toBe(held);
  });

  it('rounds once, exactly, at rates below a nano-USD', () => {
    const tiny = model({ image: '0.0000000004' });
    expect(imageCharge(tiny, 1, undefined)).toBe(0n);
    expect(imageCharge(tiny, 10, undefined)).toBe(4n);
    expect(imageWorstCase(model({}), 5, undefined)).toBe(0n);
  });
});
