import { buildRegistry, parseConfig } from '@gateway/config';
import { heldSeconds, millisToSeconds, secondsToMillis, videoCharge, videoWorstCase } from './video';

const config = {
  providers: [{ id: 'sim', kind: 'simulated' }],
  models: [
    { id: 't/video', name: 'V', category: 'video', status: 'available', pricing: { second: '0.05' }, endpoints: [{ provider: 'sim', model: 'v' }] },
    {
      id: 't/video-flat',
      name: 'VF',
      category: 'video',
      status: 'available',
      default_duration: 4,
      pricing: { second: '0.0000000013', request: '0.01' },
      endpoints: [{ provider: 'sim', model: 'v' }],
    },
  ],
};

describe('video pricing: exact integers, never floats', () => {
  let registry: ReturnType<typeof buildRegistry>;
  beforeAll(() => {
    registry = buildRegistry(parseConfig(config));
  });
  const model = (id: string) => {
    const m = registry.get(id);
    if (!m) throw new Error(id);
    return m;
  };

  it('the hold is duration × n at the second rate', () => {
    expect(videoWorstCase(model('t/video'), 3, 5)).toBe(750_000_000n); // 5 s × 3 × 0.05 = 0.75 USD
  });

  it('without a duration the hold uses the model default, else ten seconds', () => {
    expect(heldSeconds(model('t/video-flat'), undefined)).toBe(4);
    expect(heldSeconds(model('t/video'), undefined)).toBe(10);
    expect(videoWorstCase(model('t/video'), 1, undefined)).toBe(500_000_000n);
  });

  it('fractional seconds bill to the millisecond, and a sub-nano rate rounds once, half up', () => {
    expect(videoCharge(model('t/video'), 5_500n)).toBe(275_000_000n);
    // 1500 ms × 0.0000000013 = 0.00000000195 USD = 1.95 nano, + the 0.01 flat rate.
    expect(videoCharge(model('t/video-flat'), 1_500n)).toBe(10_000_002n);
  });

  it('seconds and milliseconds convert without drift (0.1 + 0.2 is not a problem here)', () => {
    expect(secondsToMillis(0.3)).toBe(300n);
    expect(secondsToMillis(2.0005)).toBe(2001n);
    expect(millisToSeconds(5_500n)).toBe('5.5');
    expect(millisToSeconds(2_000n)).toBe('2');
    expect(millisToSeconds(1n)).toBe('0.001');
  });
});
