import { SERVICE_NAMES, type ServiceName, startsAfter } from './services';

/**
 * `names` ordered so that each comes after what `dependsOn` says it starts after; of those free to go next, the
 * earliest in `names` goes, so the order is stable and reads like the list. Throws on a cycle or an unknown name.
 */
export function dependencyOrder<N extends string>(names: readonly N[], dependsOn: (name: N) => readonly N[]): N[] {
  for (const n of names) {
    const unknown = dependsOn(n).filter((d) => !names.includes(d));
    if (unknown.length > 0) throw new Error(`start order: ${n} starts after ${unknown.join(', ')}, which is not in the list`);
  }
  const order: N[] = [];
  const left = [...names];
  while (left.length > 0) {
    const next = left.findIndex((n) => dependsOn(n).every((d) => order.includes(d)));
    if (next < 0) throw new Error(`start order: a cycle among ${left.join(', ')}`);
    order.push(left[next]);
    left.splice(next, 1);
  }
  return order;
}

/**
 * The order in which one process starts the services of the table it runs (ServiceEntry.startsAfter); they stop in
 * reverse. A service not given is skipped, with what it alone would have ordered.
 */
export function startOrder(names: readonly ServiceName[] = SERVICE_NAMES): ServiceName[] {
  const all = dependencyOrder(SERVICE_NAMES, startsAfter);
  return all.filter((n) => names.includes(n));
}
