import type { Request, Response } from 'express';

/**
 * The media service's file store as the jobs service uses it: a job's video is kept there behind a /v1/files
 * reference (the media service owns references, storage and expiry), and /v1/videos/{id}/content streams it from
 * there. In-process when embedded; over the media service's internal API in the fleet.
 */
export interface MediaFilesPort {
  keep(owner: { accountId: string; requestId: string }, bytes: Buffer, contentType: string): Promise<{ id: string }>;
  /** Answers `req` with the file's bytes exactly as GET /v1/files/{id} would (Range, 404 not_found, 410 gone). */
  serve(req: Request, res: Response, fileId: string): Promise<void>;
}
