import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SOURCE = path.join(__dirname, 'powercut.c');

/**
 * powercut.c compiled for this machine, once per version of its source. gcc is on every machine the project runs
 * its tests on; without it this throws, and under CI the suite fails rather than skips.
 */
export function powerCutShim(): string {
  const source = fs.readFileSync(SOURCE);
  const hash = crypto.createHash('sha256').update(source).digest('hex').slice(0, 16);
  const lib = path.join(os.tmpdir(), `gateway-powercut-${hash}.so`);
  if (!fs.existsSync(lib)) {
    const tmp = `${lib}.${process.pid}`;
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-Wall', '-Wno-format-truncation', '-o', tmp, SOURCE, '-ldl', '-lpthread'], { stdio: 'inherit' });
    fs.renameSync(tmp, lib);
  }
  return lib;
}

/**
 * A directory that loses what was not synced when the power goes: the process runs on `live` with the shim loaded,
 * and `durable` is what the disk would hold after a cut at any instant (powercut.c says under which ordering).
 */
export interface PowerCutDisk {
  live: string;
  durable: string;
  /** The environment that loads the shim into a child process. */
  env: Record<string, string>;
  /** Everything on `live` reached the disk, as after a clean shutdown and `sync`: the durable copy starts from it. */
  syncAll(): void;
  /** The power is gone (the process already killed): `live` becomes what the disk kept, nothing more. */
  cut(): void;
}

export function powerCutDisk(live: string): PowerCutDisk {
  const durable = `${live}.durable`;
  fs.mkdirSync(live, { recursive: true });
  fs.mkdirSync(durable, { recursive: true });
  return {
    live,
    durable,
    env: { LD_PRELOAD: powerCutShim(), POWERCUT_LIVE: live, POWERCUT_DURABLE: durable },
    syncAll() {
      fs.rmSync(durable, { recursive: true, force: true });
      fs.cpSync(live, durable, { recursive: true });
    },
    cut() {
      fs.rmSync(live, { recursive: true, force: true });
      fs.renameSync(durable, live);
      fs.mkdirSync(durable);
    },
  };
}
