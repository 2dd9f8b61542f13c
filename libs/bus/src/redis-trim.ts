import type Redis from 'ioredis';

/**
 * Trims a stream only below what every consumer group has acknowledged. `XADD MAXLEN ~` trimmed by length alone, so a
 * group that fell more than maxLen behind (billing down for a minute at 1,000 requests/s) lost the settles it had not
 * read, and Redis acknowledged their pending entries without an error. The floor of a group is its oldest pending
 * entry, or its last delivered id when nothing is pending: everything older has been acknowledged by it. One script,
 * so no group can move between reading the floors and trimming. A stream no group reads keeps its newest `keep`
 * entries as before: that is history for a group created later from the beginning, not anybody's backlog.
 * `MINID ~` removes only whole nodes below the floor, never an entry at or above it; a publish refused at the cap
 * trims exactly instead, since a stream that small may fit in one node. Returns the length after.
 */
const TRIM_LUA = `
local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local keep = tonumber(ARGV[1])
local len = redis.call('XLEN', KEYS[1])
if len <= keep then return len end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then
  redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', keep)
  return redis.call('XLEN', KEYS[1])
end
local floor = nil
for _, g in ipairs(groups) do
  local name, pending, last
  for i = 1, #g, 2 do
    if g[i] == 'name' then name = g[i + 1]
    elseif g[i] == 'pending' then pending = g[i + 1]
    elseif g[i] == 'last-delivered-id' then last = g[i + 1] end
  end
  local point = last
  if pending > 0 then point = redis.call('XPENDING', KEYS[1], name)[2] end
  if floor == nil or older(point, floor) then floor = point end
end
if ARGV[2] == 'exact' then redis.call('XTRIM', KEYS[1], 'MINID', floor)
else redis.call('XTRIM', KEYS[1], 'MINID', '~', floor) end
return redis.call('XLEN', KEYS[1])
`;

const COMMAND = 'busTrimAcknowledged';
type WithTrim = Redis & { [COMMAND](key: string, keep: number, mode: 'approx' | 'exact'): Promise<number> };

export interface TrimmerConfig {
  cmd: Redis;
  /** Length from which acknowledged entries are trimmed. */
  keep: number;
  /** Length (unread entries included) from which publishes are refused rather than anything unread trimmed. */
  cap: number;
  onError(err: unknown, streamKey: string): void;
}

/**
 * The publisher's side of trimming: a trim pass every `keep / 10` publishes to a stream (at most one in flight per
 * stream), and the refusal once a stream holds `cap` entries because a group stopped reading.
 */
export class StreamTrimmer {
  private readonly cmd: WithTrim;
  private readonly every: number;
  private readonly streams = new Map<string, { sinceTrim: number; length: number; trimming?: Promise<void> }>();

  constructor(private readonly c: TrimmerConfig) {
    c.cmd.defineCommand(COMMAND, { numberOfKeys: 1, lua: TRIM_LUA });
    this.cmd = c.cmd as WithTrim;
    this.every = Math.max(1, Math.floor(c.keep / 10));
  }

  /** Throws while the stream is at its cap, after a fresh trim pass found no room: the publisher must hear of it. */
  async admit(streamKey: string): Promise<void> {
    const s = this.state(streamKey);
    if (s.length < this.c.cap) return;
    await this.trim(streamKey, 'exact');
    if (s.length >= this.c.cap) {
      throw new Error(
        `bus: stream ${streamKey} holds ${s.length} entries, at its cap of ${this.c.cap}, and a consumer group has not read them: publish refused`,
      );
    }
  }

  /** After each successful publish. */
  published(streamKey: string): void {
    const s = this.state(streamKey);
    s.length++;
    if (++s.sinceTrim > this.every) void this.trim(streamKey);
  }

  private trim(streamKey: string, mode: 'approx' | 'exact' = 'approx'): Promise<void> {
    const s = this.state(streamKey);
    s.sinceTrim = 0;
    s.trimming ??= this.cmd[COMMAND](streamKey, this.c.keep, mode)
      .then(
        (length) => {
          s.length = Number(length);
        },
        (err: unknown) => this.c.onError(err, streamKey),
      )
      .finally(() => {
        s.trimming = undefined;
      });
    return s.trimming;
  }

  private state(streamKey: string) {
    let s = this.streams.get(streamKey);
    if (!s) {
      // Due at once: a process that starts publishing learns the stream's length (and whether it is full) first thing.
      s = { sinceTrim: this.every, length: 0 };
      this.streams.set(streamKey, s);
    }
    return s;
  }
}
