/** Money as the account routes give it (a number rounded to cents) or as an exact string (a charge). */
export function usd(v: number | string | null | undefined): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return `$${v.toFixed(2)}`;
  return `$${v}`;
}

export const int = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

/** An ISO time as "2026-11-28 01:02 UTC" (short enough for a phone's table). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
