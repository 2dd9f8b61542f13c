import { z } from 'zod';
import { GatewayError } from '@gateway/errors';
import { validate } from './validate';

const refusal = (schema: z.ZodType, value: unknown) => {
  try {
    validate(schema, value);
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    return (e as GatewayError).message;
  }
  throw new Error('validate accepted it');
};

describe('validate: the message says what is wrong', () => {
  const body = z.object({ model: z.string(), models: z.array(z.string().min(1)).max(10).optional() });

  it('a field of the wrong type is named with its type error alone, not the rules checked on the wrong type after it', () => {
    expect(refusal(body, { model: 'm', models: 'a-model-slug-longer-than-ten' })).toBe(
      'Invalid request: models: Invalid input: expected array, received string',
    );
  });

  it('still names up to five fields, one issue each', () => {
    const five = z.object({ a: z.string(), b: z.string(), c: z.string(), d: z.string(), e: z.string(), f: z.string() });
    expect(refusal(five, {}).split('; ')).toHaveLength(5);
  });

  it('no body at all says the body is missing and how to send one', () => {
    expect(refusal(body, undefined)).toBe('Request body is missing: send a JSON object with Content-Type: application/json');
  });
});
