import { cursorParam, encodeCursor, limitParam, pageOf, queryText } from './paging';

describe('keyset pages', () => {
  it('a cursor carries its position to the microsecond, whatever the id holds', () => {
    for (const p of [
      { createdAt: '2026-03-01T10:00:00.000501Z', id: 'req_abc' },
      { createdAt: '2024-02-29T23:59:59.999999Z', id: 'an|id with | bars' },
    ])
      expect(cursorParam.parse(encodeCursor(p))).toEqual(p);
  });

  it('refuses what encodeCursor did not write', () => {
    const raw = (s: string) => Buffer.from(s).toString('base64url');
    for (const bad of [
      '',
      'x',
      raw('2026-03-01T10:00:00.000Z|req_a'),
      raw('2026-02-30T10:00:00.000000Z|req_a'),
      raw('|req_a'),
      raw('2026-03-01T10:00:00.000000Z|'),
      // PostgreSQL text holds no NUL: the database would fail (503) where the client erred (400).
      raw('2026-03-01T10:00:00.000000Z|req_\u0000a'),
    ])
      expect({ bad, ok: cursorParam.safeParse(bad).success }).toEqual({ bad, ok: false });
  });

  it("a listing's free text (search, model) is refused with a NUL in it, and kept as given otherwise", () => {
    expect(queryText(200).safeParse('a\u0000b').success).toBe(false);
    expect(queryText(200).parse("%_\\ it's")).toBe("%_\\ it's");
    expect(queryText(3).safeParse('abcd').success).toBe(false);
  });

  it('limit: 50 by default, 1 to 200', () => {
    expect(limitParam.parse(undefined)).toBe(50);
    expect(limitParam.parse('200')).toBe(200);
    for (const bad of ['0', '201', '1.5', 'x']) expect(limitParam.safeParse(bad).success).toBe(false);
  });

  it('one row more than the limit says another page follows, and the cursor is the last row shown', () => {
    const rows = [1, 2, 3].map((n) => ({ n, position: { createdAt: `2026-03-01T10:00:00.00000${n}Z`, id: `r${n}` } }));
    const page = pageOf(rows, 2, (r) => r.n);
    expect(page).toEqual({ data: [1, 2], has_more: true, next_cursor: encodeCursor(rows[1].position) });
    expect(pageOf(rows.slice(0, 2), 2, (r) => r.n)).toEqual({ data: [1, 2], has_more: false, next_cursor: null });
    expect(pageOf([], 2, (r) => r)).toEqual({ data: [], has_more: false, next_cursor: null });
  });
});
