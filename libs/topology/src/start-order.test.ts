import { SERVICE_NAMES, dependencyOrder, serviceEntry, startOrder, startsAfter } from './index';

describe('dependencyOrder', () => {
  const deps: Record<string, string[]> = { a: [], b: ['c'], c: [], d: ['a', 'b'] };

  it('puts each name after what it depends on, otherwise keeping the list’s order', () => {
    expect(dependencyOrder<string>(['a', 'b', 'c', 'd'], (n) => deps[n])).toEqual(['a', 'c', 'b', 'd']);
    expect(dependencyOrder<string>(['d', 'c', 'b', 'a'], (n) => deps[n])).toEqual(['c', 'b', 'a', 'd']);
  });

  it('refuses a cycle and a dependency missing from the list, naming them', () => {
    expect(() => dependencyOrder(['x', 'y'], (n) => (n === 'x' ? ['y'] : ['x']))).toThrow(/cycle among x, y/);
    expect(() => dependencyOrder(['x'], () => ['z'])).toThrow(/x starts after z/);
  });
});

describe('the service table’s start order', () => {
  it('starts every service once, after what it starts after', () => {
    const order = startOrder();
    expect([...order].sort()).toEqual([...SERVICE_NAMES].sort());
    for (const n of order) for (const d of startsAfter(n)) expect(order.indexOf(d)).toBeLessThan(order.indexOf(n));
  });

  it('subscribes the catalogue before billing announces its accounts, and starts the rest after billing', () => {
    expect(startOrder()).toEqual(['catalogue', 'billing', 'text', 'media', 'jobs', 'mcp']);
    expect(startOrder(['jobs', 'billing'])).toEqual(['billing', 'jobs']);
  });

  it('takes a service’s peers for what it starts after when the table says nothing else', () => {
    expect(startsAfter('jobs')).toEqual(serviceEntry('jobs').peers);
    expect(startsAfter('catalogue')).toEqual([]);
  });
});
