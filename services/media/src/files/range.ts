/** A satisfiable single byte range, both ends inclusive. */
export interface Span {
  start: number;
  end: number;
}

/**
 * Reads a Range header against an object of `size` bytes (RFC 9110 §14): one `bytes=` range, open-ended or a
 * suffix. Several ranges or another unit answer the whole object (a server may ignore Range); a range that
 * starts past the end is unsatisfiable.
 */
export function parseRange(header: string | undefined, size: number): Span | 'whole' | 'unsatisfiable' {
  if (!header) return 'whole';
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'whole';
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
