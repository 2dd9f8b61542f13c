import {
  accountOpenedSchema,
  CONSUMER_GROUPS,
  EVENT_TYPES,
  endpointHealthSchema,
  holdCheckpointSchema,
  holdCloseSchema,
  holdRecordSchema,
  jobStateSchema,
  TOPICS,
  usageRecordedSchema,
  usageRecordSchema,
} from './index';

const record = {
  model: 'openai/gpt-4o',
  streamed: true,
  status: 'succeeded',
  error_code: null,
  finish_reason: 'stop',
  tokens_prompt: 12,
  tokens_completion: 34,
  native_tokens_prompt: 12,
  native_tokens_completion: 34,
  num_media_prompt: 0,
  num_media_completion: 0,
  latency: 120,
  generation_time: 900,
  attempts: 1,
  fallback_used: false,
  origin: '',
  finished_at: '2026-01-02T03:04:05.000Z',
  usage_estimated: false,
} as const;
const close = {
  hold_id: 'hold_1',
  account_id: 'acct_1',
  key_id: 'key_1',
  request_id: 'req_1',
  outcome: 'settle',
  charge_nano: '1500000',
  record,
} as const;

/** One valid event of each schema, as its producer publishes it. */
const EXAMPLES = {
  'hold.close.v1': [holdCloseSchema, close],
  'hold.checkpoint.v1': [holdCheckpointSchema, { ...close, record: { ...record, status: 'failed', error_code: 'hold_expired' } }],
  'usage.recorded.v1': [
    usageRecordedSchema,
    {
      hold_id: 'hold_1',
      account_id: 'acct_1',
      request_id: 'req_1',
      model: 'openai/gpt-4o',
      outcome: 'release',
      charge_nano: '0',
      status: 'failed',
      tokens_prompt: 0,
      tokens_completion: 0,
      finished_at: '2026-01-02T03:04:05.000Z',
    },
  ],
  'account.opened.v1': [accountOpenedSchema, { account_id: 'acct_1', opened_at: '2026-01-02T03:04:05.000Z' }],
  'job.state.v1': [
    jobStateSchema,
    {
      job_id: 'job_1',
      account_id: 'acct_1',
      model: 'fal/video',
      category: 'video',
      status: 'running',
      gateway_request_id: 'req_1',
      error_code: null,
      at: '2026-01-02T03:04:05.000Z',
    },
  ],
  'endpoint.health.v1': [
    endpointHealthSchema,
    {
      source: 'text/1',
      window_start: '2026-01-02T03:04:00.000Z',
      window_end: '2026-01-02T03:04:05.000Z',
      endpoints: [{ endpoint: 'openai/gpt-4o', provider: 'openai', attempts: 3, failures: 1, latency_ms: 80, circuit: 'half_open' }],
    },
  ],
} as const;

describe('event schemas', () => {
  it('has one example per event type, each versioned, and a topic for every consumer group to read', () => {
    expect(Object.keys(EXAMPLES).sort()).toEqual(Object.values(EVENT_TYPES).sort());
    for (const type of Object.values(EVENT_TYPES)) expect(type).toMatch(/^[a-z]+(\.[a-z_]+)+\.v\d+$/);
    const topics = Object.values(TOPICS) as string[];
    expect(new Set(topics).size).toBe(topics.length);
    for (const read of Object.values(CONSUMER_GROUPS)) for (const t of read) expect(topics).toContain(t);
  });

  it.each(Object.entries(EXAMPLES))('%s survives the wire: JSON out and parsed back is the same event', (_type, [schema, event]) => {
    const back = schema.parse(JSON.parse(JSON.stringify(schema.parse(event))));
    expect(back).toEqual(event);
  });

  it('fills the defaults a producer older than their fields leaves out', () => {
    const { num_media_prompt: _a, num_media_completion: _b, origin: _c, usage_estimated: _d, ...older } = record;
    expect(usageRecordSchema.parse(older)).toEqual(record);
  });

  it('refuses data of another shape than v1, rather than apply half of it', () => {
    // What a later version might send (money as a number, a new outcome, a new status) is not a v1 event.
    const refused: [string, { safeParse(v: unknown): { success: boolean } }, unknown][] = [
      ['charge as a number', holdCloseSchema, { ...close, charge_nano: 1500000 }],
      ['a negative charge', holdCloseSchema, { ...close, charge_nano: '-1' }],
      ['a fractional charge', holdCloseSchema, { ...close, charge_nano: '1.5' }],
      ['an outcome v1 does not know', holdCloseSchema, { ...close, outcome: 'refund' }],
      ['no usage record', holdCloseSchema, { ...close, record: undefined }],
      ['an empty key id', holdCloseSchema, { ...close, key_id: '' }],
      ['negative tokens', holdCloseSchema, { ...close, record: { ...record, tokens_prompt: -1 } }],
      ['a release as a checkpoint', holdCheckpointSchema, { ...close, outcome: 'release' }],
      ['a job status v1 does not know', jobStateSchema, { ...EXAMPLES['job.state.v1'][1], status: 'paused' }],
      [
        'a circuit state v1 does not know',
        endpointHealthSchema,
        {
          ...EXAMPLES['endpoint.health.v1'][1],
          endpoints: [{ endpoint: 'a/b', provider: 'a', attempts: 1, failures: 0, latency_ms: null, circuit: 'tripped' }],
        },
      ],
      ['an account with no id', accountOpenedSchema, { opened_at: '2026-01-02T03:04:05.000Z' }],
    ];
    for (const [what, schema, data] of refused) expect({ what, accepted: schema.safeParse(data).success }).toEqual({ what, accepted: false });
  });

  it('holds a stored hold to what a later close needs: ids, an amount and an ISO start time', () => {
    const stored = {
      hold_id: 'hold_1',
      account_id: 'acct_1',
      key_id: 'key_1',
      request_id: 'req_1',
      amount_nano: '2000000',
      expires_at: '2026-01-02T03:09:05.000Z',
      model: 'fal/video',
      streamed: false,
      started_at: '2026-01-02T03:04:05.000Z',
    };
    expect(holdRecordSchema.parse(JSON.parse(JSON.stringify(stored)))).toEqual(stored);
    expect(holdRecordSchema.safeParse({ ...stored, started_at: 'yesterday' }).success).toBe(false);
    expect(holdRecordSchema.safeParse({ ...stored, key_id: '' }).success).toBe(false);
  });
});
