// `node --import bench/cpu-profile-hook.mjs`: what `--cpu-prof` does, for processes started with NODE_OPTIONS (which
// refuses --cpu-prof): samples the main thread every millisecond from start-up, and on exit writes one .cpuprofile
// into CPU_PROFILE_DIR/<service> (the folder of services/<service>/src/main.ts) under the name --cpu-prof would give
// a main thread (bench/profile-summary.ts reads the thread id from it). `pnpm bench --profile` with
// BENCH_TARGETS=fleet starts every fleet process with it.
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';

const root = process.env.CPU_PROFILE_DIR;
if (root) {
  const service = /services[\\/]([^\\/]+)[\\/]/.exec(process.argv[1] ?? '')?.[1] ?? 'process';
  const dir = path.join(root, service);
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // A session on the process's own thread answers synchronously, so the profile is written before the exit ends.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, reply) => {
      if (err) return;
      const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '.').slice(0, 15);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `CPU.${stamp}.${process.pid}.0.001.cpuprofile`), JSON.stringify(reply.profile));
    });
  });
}
