/** Child processes for the bench: spawning, readiness, stopping, free ports, and RSS and CPU read from /proc. */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');

/** Every child this run started and has not stopped yet, so an interrupted run leaves none behind. */
const live = new Set<ChildProcess>();

/** Counts a child started elsewhere (the fleet's) among those an interrupted run kills. */
export function track(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  live.add(child);
  child.once('exit', () => live.delete(child));
}

export function spawnNode(args: string[], opts: { env?: NodeJS.ProcessEnv; stdio?: StdioOptions; cwd?: string } = {}): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env ?? process.env,
    stdio: opts.stdio ?? ['ignore', 'ignore', 'inherit'],
  });
  track(child);
  return child;
}

/** The first line a child prints on stdout that matches `re` (the zero upstream prints its port first). */
export function lineMatching(child: ChildProcess, re: RegExp = /./): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const lines = out.split('\n');
      out = lines.pop()!;
      const line = lines.find((l) => re.test(l));
      if (line !== undefined) resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`child exited ${code} before printing ${re}`)));
  });
}

/** Runs a bench child (`node --import tsx <script> <json>`) and parses the JSON line it prints. */
export function runJsonChild<T>(script: string, input: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawnNode(['--import', 'tsx', path.join(ROOT, 'bench', script), JSON.stringify(input)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop();
      if (code === 0 && line) {
        try {
          return resolve(JSON.parse(line) as T);
        } catch {
          /* reported below */
        }
      }
      reject(new Error(`${script} exited ${code}: ${out.slice(-500)}`));
    });
  });
}

/** Signals a child and waits for it to exit; SIGKILL after `timeoutMs`. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill(signal);
  });
}

export function killAllChildren(): void {
  for (const c of live) c.kill('SIGKILL');
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port the OS says is free now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** A base port in 20000-29999 whose every port that `portsOf` lists is free (the fleet needs fourteen). */
export async function freePortSet(portsOf: (base: number) => number[]): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    const ports = portsOf(base);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free set of ports found');
}

export async function waitFor(url: string, child?: ChildProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`the process behind ${url} exited ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} never became ready`);
}

// Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every mainstream architecture).
const TICKS_PER_SECOND = 100;

export function rssKb(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // exited
  }
}

export function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; fields 14 and 15 (utime, stime) count from after its ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

export interface ProcUsage {
  /** Highest sum of VmRSS over the processes, sampled every 200 ms. */
  maxRssMiB: number;
  /** CPU time the processes used between start and stop. */
  cpuMs: number;
}

/** Samples a set of processes during one run: their summed RSS (max) and their CPU time. */
export class ProcSampler {
  private maxKb = 0;
  private cpu0 = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly pids: number[]) {}

  start(): this {
    this.cpu0 = this.pids.reduce((s, p) => s + cpuMs(p), 0);
    const sample = () => {
      this.maxKb = Math.max(
        this.maxKb,
        this.pids.reduce((s, p) => s + rssKb(p), 0),
      );
    };
    sample();
    this.timer = setInterval(sample, 200);
    return this;
  }

  stop(): ProcUsage {
    clearInterval(this.timer);
    this.maxKb = Math.max(
      this.maxKb,
      this.pids.reduce((s, p) => s + rssKb(p), 0),
    );
    return { maxRssMiB: this.maxKb / 1024, cpuMs: this.pids.reduce((s, p) => s + cpuMs(p), 0) - this.cpu0 };
  }
}

/** The machine's CPU time counters over all CPUs (/proc/stat, in ticks). */
export interface CpuTimes {
  total: number;
  steal: number;
}

export function cpuTimes(): CpuTimes {
  try {
    // cpu user nice system idle iowait irq softirq steal guest guest_nice: guest time is already inside user.
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
  } catch {
    return { total: 0, steal: 0 };
  }
}

/**
 * The share of the machine's CPU time a hypervisor gave to other guests between two readings (% of all CPUs). On a
 * shared virtual machine it is what makes figures move run to run: read every figure beside it.
 */
export function stealPct(from: CpuTimes, to: CpuTimes): number {
  const total = to.total - from.total;
  return total > 0 ? ((to.steal - from.steal) / total) * 100 : 0;
}
