import { z } from 'zod';

/** The slug of a model: `<author>/<slug>`. */
export const modelSlug = z
  .string()
  .regex(/^[^/\s]+\/[^/\s]+$/, 'a model slug, <author>/<slug>')
  .describe('Model slug, e.g. demo/chat-small');

export const jobId = z
  .string()
  .regex(/^job_[A-Za-z0-9]+$/, 'a job id, job_<id>')
  .describe('The job id (request_id of the submit), job_<id>');

/** Output schemas stay open: the gateway may add fields to a record without breaking a client that validates. */
export const open = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape);
