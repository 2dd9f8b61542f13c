import { modelOf } from '../testing/models';
import { headlineOf } from './headline';
import { discountOf, referenceOf } from './reference';

const text = (extra: object) => modelOf({ id: 'a/m', category: 'text', pricing: { prompt: '0.0000025' }, ...extra });

describe('headline, reference and discount', () => {
  it('the headline is derived from the rates when the config gives none (2.5 USD per 1M input tokens)', () => {
    expect(headlineOf(text({}))).toEqual({ unit: '1M tokens', price: 2.5 });
  });

  it('without reference_price the model is its own reference, so no discount', () => {
    expect(referenceOf(text({}))).toBe(2.5);
    expect(discountOf(text({}))).toBe(0);
  });

  it('the discount is the fraction below the reference, to four decimals', () => {
    expect(referenceOf(text({ reference_price: 3 }))).toBe(3);
    expect(discountOf(text({ reference_price: 3 }))).toBe(0.1667);
    expect(discountOf(text({ reference_price: 5 }))).toBe(0.5);
  });

  it('a price above the reference (a markup) or a free reference reads a discount of 0, never negative', () => {
    expect(discountOf(text({ reference_price: 2 }))).toBe(0);
    expect(discountOf(text({ reference_price: 0 }))).toBe(0);
  });

  it('the reference is in the headline unit the config gives', () => {
    const m = text({ unit: '1K tokens', price: 0.002, reference_price: 0.004 });
    expect(discountOf(m)).toBe(0.5);
  });
});
