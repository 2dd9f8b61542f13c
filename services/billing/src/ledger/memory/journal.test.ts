import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eio, heldSyncs } from '../../testing/held-syncs';
import { FileJournal, JournalFailed, readJournal } from './journal';
import type { LedgerRecord } from './records';

/** A place record with a model name long enough that a few of them fill a small test segment. */
const place = (seq: number, model = 'bench/model-with-a-long-name'): LedgerRecord => ({
  seq,
  t: 'place',
  h: { id: `h${seq}`, account: 'a1', key: 'k1', request: `req_${seq}`, model, amount: '500', created_ms: 1_000 },
  idem: null,
  expires_ms: 9_000,
});
/** The next loop turn, where a journal writes what its waiting settles need. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
const settled = (p: Promise<void>) => {
  const state = { done: false };
  p.then(
    () => {
      state.done = true;
    },
    () => {},
  );
  return state;
};
const segments = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('seg-'))
    .sort();

/** Each test's own journal directory, for both groups below. */
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-journal-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('FileJournal: records survive in preallocated segments', () => {
  it('keeps every record across segment rolls, in order, and no commit changes a segment size', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 2048 });
    const written: LedgerRecord[] = [];
    for (let seq = 1; seq <= 60; seq++) {
      written.push(place(seq));
      j.append(place(seq));
      // Some commits carry one record, some several: both must land whole in one segment.
      if (seq % 3 !== 1) await j.durable(seq);
    }
    await j.durable(60);
    expect(readJournal(dir)).toEqual(written);
    expect(segments(dir).length).toBeGreaterThan(3);
    // Every segment kept the size it was made with: records overwrote zeros, nothing was appended.
    for (const name of segments(dir)) expect(fs.statSync(path.join(dir, name)).size).toBe(2048);
    await j.close();
  });

  it('reads nothing past a torn write, even one a power cut left with a hole of zeros inside it', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 4096 });
    j.append(place(1));
    j.append(place(2));
    await j.durable(2);
    await j.close();
    const [seg] = segments(dir);
    const file = path.join(dir, seg);
    const end = fs.readFileSync(file, 'utf8').indexOf('\0');
    // The third record's write: its first and last bytes reached the disk, the middle did not.
    const third = Buffer.from(`${JSON.stringify(place(3))}\n${JSON.stringify(place(4))}\n`);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, third, 0, 20, end);
    fs.writeSync(fd, third, third.length - 40, 40, end + third.length - 40);
    fs.closeSync(fd);
    expect(readJournal(dir)).toEqual([place(1), place(2)]);
  });

  it('leaves out a last record cut short by a kill, and reads the segments before it whole', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 1024 });
    for (let seq = 1; seq <= 12; seq++) {
      j.append(place(seq));
      await j.durable(seq);
    }
    await j.close();
    expect(segments(dir).length).toBeGreaterThan(1);
    const last = path.join(dir, segments(dir).at(-1)!);
    const text = fs.readFileSync(last, 'utf8');
    const end = text.indexOf('\0');
    const fd = fs.openSync(last, 'r+');
    fs.writeSync(fd, '{"seq":13,"t":"pla', end);
    fs.closeSync(fd);
    expect(readJournal(dir).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('starts clean: segments and a spare a previous process left are removed, the next record numbered on', async () => {
    fs.writeFileSync(path.join(dir, 'seg-0000000000000001.jsonl'), `${JSON.stringify(place(1))}\n`);
    fs.writeFileSync(path.join(dir, 'spare.jsonl'), 'not zeros');
    const j = await FileJournal.open(dir, 1, { segmentBytes: 1024 });
    expect(fs.existsSync(path.join(dir, 'spare.jsonl'))).toBe(false);
    j.append(place(2));
    await j.durable(2);
    expect(segments(dir)).toEqual(['seg-0000000000000002.jsonl']);
    expect(readJournal(dir)).toEqual([place(2)]);
    await j.close();
  });

  it('deletes only the segments whose every record the tables hold', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 1024 });
    for (let seq = 1; seq <= 12; seq++) {
      j.append(place(seq));
      await j.durable(seq);
    }
    const before = segments(dir);
    const firstOfSecond = Number(before[1].slice(4, 20));
    j.retire(firstOfSecond - 1);
    // retire removes files without waiting: give the removal up to two seconds on a busy machine.
    for (let waited = 0; segments(dir).length === before.length && waited < 2_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(segments(dir)).toEqual(before.slice(1));
    expect(readJournal(dir)[0].seq).toBe(firstOfSecond);
    await j.close();
  });

  it('writes a commit larger than a whole segment into one, past its zeros', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 512 });
    const written = Array.from({ length: 12 }, (_, i) => place(i + 1));
    for (const r of written) j.append(r);
    await j.durable(12);
    j.append(place(13));
    await j.durable(13);
    expect(readJournal(dir)).toEqual([...written, place(13)]);
    expect(segments(dir)).toEqual(['seg-0000000000000001.jsonl', 'seg-0000000000000013.jsonl']);
    await j.close();
  });

  it('counts bytes, not characters: a record with multi-byte text is not cut at a segment end', async () => {
    const j = await FileJournal.open(dir, 0, { segmentBytes: 1024 });
    const written: LedgerRecord[] = [];
    for (let seq = 1; seq <= 10; seq++) {
      written.push(place(seq, 'modèle/ünïcødé-名前'));
      j.append(written[seq - 1]);
      await j.durable(seq);
    }
    expect(readJournal(dir)).toEqual(written);
    await j.close();
  });
});

describe('FileJournal: a settle is in the file at once and acknowledged only after a flush', () => {
  it('has the records in the file the turn after a settle waits, and resolves durable() only when the flush ends', async () => {
    const { held, datasync } = heldSyncs();
    const j = await FileJournal.open(dir, 0, { datasync });
    j.append(place(1));
    j.append(place(2));
    const synced = settled(j.durable(2));
    await nextTurn();
    // A kill of the process from here on loses nothing: another process reads both records.
    expect(readJournal(dir)).toEqual([place(1), place(2)]);
    expect(held).toHaveLength(1);
    await nextTurn();
    expect(synced.done).toBe(false);
    held.shift()?.();
    await j.durable(2);
    await j.close();
  });

  it('gives every settle that arrives during a flush one shared next flush, which covers them all', async () => {
    const { held, datasync } = heldSyncs();
    const j = await FileJournal.open(dir, 0, { datasync, syncGapMs: 0 });
    j.append(place(1));
    const first = j.durable(1);
    await nextTurn();
    expect(held).toHaveLength(1);
    const later = [];
    for (let seq = 2; seq <= 9; seq++) {
      j.append(place(seq));
      later.push(settled(j.durable(seq)));
    }
    await nextTurn();
    // Written already, but the running flush began before them: none of them may be acknowledged by it.
    expect(readJournal(dir)).toHaveLength(9);
    held.shift()?.();
    await first;
    await nextTurn();
    expect(later.some((s) => s.done)).toBe(false);
    expect(held).toHaveLength(1);
    held.shift()?.();
    await j.durable(9);
    expect(later.every((s) => s.done)).toBe(true);
    expect(held).toHaveLength(0);
    await j.close();
  });

  it('syncs a segment before leaving it, so a flush of the next one never stands for records it does not hold', async () => {
    const { held, datasync } = heldSyncs();
    const flushed: number[] = [];
    const j = await FileJournal.open(dir, 0, {
      segmentBytes: 1024,
      syncGapMs: 0,
      datasync: (fd, done) => {
        flushed.push(fs.fstatSync(fd).ino);
        datasync(fd, done);
      },
    });
    for (let seq = 1; seq <= 3; seq++) j.append(place(seq));
    const first = settled(j.durable(3));
    await nextTurn();
    // Written into the first segment while its flush runs: that flush does not cover them.
    for (let seq = 4; seq <= 5; seq++) j.append(place(seq));
    const second = settled(j.durable(5));
    await nextTurn();
    // These do not fit beside the first five: the next segment takes them.
    for (let seq = 6; seq <= 10; seq++) j.append(place(seq));
    const third = settled(j.durable(10));
    await nextTurn();
    for (let flushes = 0; !third.done && flushes < 10; flushes++) {
      for (let waited = 0; held.length === 0 && !third.done && waited < 2_000; waited += 5) await new Promise((r) => setTimeout(r, 5));
      held.shift()?.();
      await nextTurn();
    }
    await j.durable(10);
    expect([first.done, second.done]).toEqual([true, true]);
    const inodes = segments(dir).map((name) => fs.statSync(path.join(dir, name)).ino);
    expect(inodes).toHaveLength(2);
    // Records 4 and 5 needed a flush of the first segment of their own; the second segment's could not stand for it.
    expect(flushed).toEqual([inodes[0], inodes[0], inodes[1]]);
    expect(readJournal(dir).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await j.close();
  });

  it('fails every waiting settle and every later one when a flush fails: nothing is acknowledged that may be lost', async () => {
    const { held, datasync } = heldSyncs();
    const j = await FileJournal.open(dir, 0, { datasync });
    j.append(place(1));
    const waiting = j.durable(1);
    await nextTurn();
    held.shift()?.(eio());
    await expect(waiting).rejects.toThrow('EIO');
    await expect(j.durable(2)).rejects.toThrow('EIO');
    await j.close();
  });

  it('stops for good at a failed flush, says so once, and refuses records instead of buffering them for ever', async () => {
    const { held, datasync } = heldSyncs();
    const failures: unknown[] = [];
    const j = await FileJournal.open(dir, 0, { datasync, syncGapMs: 0, onFail: (err) => failures.push(err) });
    expect(j.healthy).toBe(true);
    j.append(place(1));
    const first = j.durable(1);
    await nextTurn();
    // Written while the failing flush runs: it is not covered by it, and no later flush may stand for it.
    j.append(place(2));
    const second = j.durable(2);
    held.shift()?.(eio());
    await expect(first).rejects.toThrow(JournalFailed);
    await expect(second).rejects.toThrow('EIO');
    expect(j.healthy).toBe(false);
    // Before the fix append took every record after a failure into a buffer nothing ever wrote: memory without bound.
    expect(() => j.append(place(3))).toThrow(JournalFailed);
    await new Promise((r) => setTimeout(r, 30));
    expect(held).toHaveLength(0);
    expect(readJournal(dir).map((r) => r.seq)).not.toContain(3);
    expect(failures).toEqual([expect.objectContaining({ code: 'EIO' })]);
    await j.close();
  });
});
