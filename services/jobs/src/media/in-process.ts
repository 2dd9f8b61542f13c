import type { Request, RequestHandler, Response } from 'express';
import type { MediaFilesPort } from './port';

/** The embedded gateway's media service, called directly: its own /v1/files route answers the content request. */
export function inProcessMediaFiles(media: { keep: MediaFilesPort['keep']; router: RequestHandler }): MediaFilesPort {
  return {
    keep: (owner, bytes, contentType) => media.keep(owner, bytes, contentType),
    serve: (req: Request, res: Response, fileId: string) =>
      new Promise<void>((resolve, reject) => {
        // The files route reads the account from the same internal headers this request already carries.
        req.url = `/v1/files/${encodeURIComponent(fileId)}`;
        res.once('finish', () => resolve());
        res.once('close', () => resolve());
        media.router(req, res, (err?: unknown) => (err ? reject(err) : reject(new Error(`media did not answer for ${fileId}`))));
      }),
  };
}
