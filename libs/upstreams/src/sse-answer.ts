import type { Dispatcher } from 'undici';
import { SseSplitter } from './sse';
import { abortedBy, utf8 } from './whole-answer';

/** A streamed answer: its frames as they arrive, or an error answer read whole. */
export type SseAnswer = { statusCode: number; frames: SseFrames } | { statusCode: number; text: string };

/** Payloads held unread before the upstream is paused (TCP's window then slows it); it resumes at half. */
const HIGH_WATER = 64;

/**
 * Dispatches one request and hands its SSE `data:` payloads to the reader as undici delivers the bytes. Reading
 * through `request()` put every first frame through a Readable, its async iterator and a generator over it before
 * the protocol saw it: half of what a stream's first byte cost over a whole answer's. Errors are undici's own, so
 * `classify` reads them as before; the signal aborts the call until its last byte.
 */
export function dispatchSse(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal?: AbortSignal): Promise<SseAnswer> {
  return new Promise((resolve, reject) => {
    let statusCode = 0;
    let frames: SseFrames | undefined;
    const errorChunks: Buffer[] = [];
    const aborts = abortedBy(signal);
    dispatcher.dispatch(options, {
      onConnect: aborts.onConnect,
      onHeaders(status, _headers, resume) {
        // 1xx answers (100 Continue, 103 Early Hints) come before the final one.
        if (status < 200) return true;
        statusCode = status;
        if (status < 400) {
          frames = new SseFrames(resume);
          resolve({ statusCode, frames });
        }
        return true;
      },
      onData(chunk) {
        if (frames) return frames.push(chunk);
        errorChunks.push(chunk);
        return true;
      },
      onComplete() {
        aborts.stop();
        if (frames) frames.finish();
        else resolve({ statusCode, text: utf8(errorChunks) });
      },
      onError(err) {
        aborts.stop();
        if (frames) frames.fail(err);
        // An error answer cut short still said its status, which decides whether the client is at fault.
        else if (statusCode >= 400) resolve({ statusCode, text: utf8(errorChunks) });
        else reject(err);
      },
    });
  });
}

/**
 * The payloads of one streamed answer, as an async iterator fed by undici's callbacks. A reader that stops early (at
 * `[DONE]`, which comes before the body's end; at a malformed frame; at a client's cost cap) leaves the rest of the
 * body to be read and dropped, not aborted: an aborted call cannot give its connection back to the pool, and the
 * AbortError's stack trace alone was once 2.5 % of a streamed call's CPU.
 */
export class SseFrames implements AsyncIterableIterator<string> {
  private readonly splitter = new SseSplitter();
  private readonly queue: string[] = [];
  private readonly enqueue = (data: string) => {
    this.queue.push(data);
  };
  private waiter: { resolve: (r: IteratorResult<string>) => void; reject: (e: Error) => void } | undefined;
  private ended = false;
  private stopped = false;
  private paused = false;
  private error: Error | undefined;

  constructor(private readonly resume: () => void) {}

  /** undici's `onData`: false pauses the upstream until the reader has caught up. */
  push(chunk: Buffer): boolean {
    if (this.stopped) return true;
    this.splitter.write(chunk, this.enqueue);
    this.wake();
    this.paused = this.queue.length >= HIGH_WATER;
    return !this.paused;
  }

  finish(): void {
    if (!this.stopped) this.splitter.end(this.enqueue);
    this.ended = true;
    this.wake();
  }

  fail(err: Error): void {
    this.error = err;
    this.wake();
  }

  next(): Promise<IteratorResult<string>> {
    const value = this.queue.shift();
    if (value !== undefined) {
      if (this.paused && this.queue.length <= HIGH_WATER / 2) {
        this.paused = false;
        this.resume();
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended || this.stopped) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The reader is done: what is left of the body is read and dropped. */
  return(): Promise<IteratorResult<string>> {
    this.stopped = true;
    this.queue.length = 0;
    this.waiter?.resolve({ value: undefined, done: true });
    this.waiter = undefined;
    if (this.paused) {
      this.paused = false;
      this.resume();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private wake(): void {
    const waiter = this.waiter;
    if (!waiter) return;
    const value = this.queue.shift();
    if (value !== undefined) waiter.resolve({ value, done: false });
    else if (this.error) waiter.reject(this.error);
    else if (this.ended) waiter.resolve({ value: undefined, done: true });
    else return;
    this.waiter = undefined;
  }
}
