import { newRequestId } from './context';

describe('newRequestId', () => {
  it('gives distinct ids of the documented shape across refills of its random pool', () => {
    const ids = Array.from({ length: 5_000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(newRequestId('hold')).toMatch(/^hold_[0-9a-z]{24}$/);
  });
});
