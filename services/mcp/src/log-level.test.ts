import { LoggingLevelSchema } from '@modelcontextprotocol/sdk/types.js';
import { LOG_LEVELS, logRank } from './log-level';

describe('LOG_LEVELS', () => {
  it("are the SDK's levels, in its order (least severe first)", () => {
    expect([...LOG_LEVELS]).toEqual(LoggingLevelSchema.options);
    expect(logRank('debug')).toBe(0);
    expect(logRank('emergency')).toBe(7);
  });
});
