import fs from 'node:fs';

/**
 * A disk flush the test lets finish (or fails) when it chooses: the fault injector at the journal's sync. Each
 * `held` entry finishes one flush, for real, or fails it with the error it is given.
 */
export function heldSyncs() {
  const held: ((err?: Error) => void)[] = [];
  const datasync = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => held.push((err) => (err ? done(err) : fs.fdatasync(fd, done)));
  return { held, datasync };
}

/** An I/O error as a failing disk returns it from fdatasync. */
export const eio = () => Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
