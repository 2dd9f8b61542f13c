import { z } from 'zod';
import type { BusEvent } from './port';

/**
 * Checked at publish on every adapter, so an event the brokers would mangle is refused in embedded mode too,
 * not first in the fleet. Kept to typeof checks: this runs on the request hot path.
 */
export function assertEvent(topic: string, event: BusEvent): void {
  if (typeof topic !== 'string' || topic === '') throw new TypeError('bus: topic must be a non-empty string');
  if (!event || typeof event.id !== 'string' || event.id === '') throw new TypeError(`bus: event on ${topic} needs a string id`);
  if (typeof event.type !== 'string' || event.type === '') throw new TypeError(`bus: event ${event.id} needs a string type`);
  if (typeof event.key !== 'string') throw new TypeError(`bus: event ${event.id} needs a string key`);
}

export function encodeEvent(event: BusEvent): string {
  const { id, type, key, data, headers } = event;
  return JSON.stringify(headers ? { id, type, key, data, headers } : { id, type, key, data });
}

const eventSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  key: z.string(),
  data: z.unknown(),
  headers: z.record(z.string(), z.string()).optional(),
});

/** Messages read from a broker are untrusted input: anything could have written to the stream or topic. */
export function decodeEvent(raw: string): BusEvent {
  return eventSchema.parse(JSON.parse(raw)) as BusEvent;
}
