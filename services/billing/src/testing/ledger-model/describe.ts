/** How a failure report names the commands of its batch and their outcomes, and how the tally counts them. */
import { GatewayError } from '@gateway/errors';
import { jsonBig, type Op, type Outcome } from './model';

export function describeOp(o: Op): string {
  switch (o.kind) {
    case 'place':
      return `place ${o.amount} on ${o.account}/${o.key}${o.short ? ' short' : ''}${o.idem ? ` idem=${o.idem}` : ''}${o.foreign ? ' foreign-key' : ''}`;
    case 'retry':
      return `retry ${o.hold.requestId} (${o.hold.id})`;
    case 'close':
      return `${o.outcome} ${o.hold.id} (${o.hold.amount}) charge ${o.charge}`;
    case 'checkpoint':
      return `checkpoint ${o.hold.id} (${o.hold.amount}) at ${o.charge}`;
    case 'ghost':
      return `${o.outcome} of a hold never placed`;
    case 'sweep':
      return 'sweep';
    case 'credit':
      return `credit ${o.amount} to ${o.account}`;
    case 'cap':
      return `cap ${o.key} at ${o.cap}`;
  }
}

export function describeOutcome(o: Outcome): string {
  if (!o.ok) return `error ${(o.error as { code?: string }).code}: ${(o.error as Error).message}`;
  return JSON.stringify(o.value, jsonBig) ?? 'ok';
}

export function outcomeName(op: Op, v: unknown): string {
  if (op.kind === 'place' || op.kind === 'retry') return op.kind === 'retry' ? 'existing' : 'placed';
  if (op.kind === 'close' || op.kind === 'ghost') return (v as { result: string }).result;
  if (op.kind === 'checkpoint') return v ? 'kept' : 'not kept';
  return 'ok';
}

export function errorName(e: unknown): string {
  if (e instanceof GatewayError) return /spend limit/.test(e.message) ? 'key_limit' : /already finished/.test(e.message) ? 'finished' : e.code;
  return 'error';
}
