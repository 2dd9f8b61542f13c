#!/usr/bin/env node
// Helm's own engine (helm-java from Maven Central, deploy/helm-engine) for the chart test and CI:
//   node scripts/helm-engine.mjs check        exit 0 when java and mvn are on PATH, 3 (with the reason) when not
//   node scripts/helm-engine.mjs build        compile deploy/helm-engine once; reused while its sources are unchanged
//   node scripts/helm-engine.mjs run <outDir> build if needed, then answer the requests on stdin (see Engine.java)
// The build is cached in deploy/helm-engine/target (a hash of pom.xml and src/ beside it) and the jars in ~/.m2,
// so a repeat run only starts one JVM. Maven runs offline first and goes to the registry only for what is missing.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const project = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'deploy', 'helm-engine');
const target = path.join(project, 'target');
const stampFile = path.join(target, 'source-hash');
const classpathFile = path.join(target, 'classpath.txt');

function die(code, message) {
  process.stderr.write(`helm-engine: ${message}\n`);
  process.exit(code);
}

function onPath(tool) {
  return spawnSync(tool, ['-version'], { stdio: 'ignore' }).status === 0;
}

function check() {
  const missing = ['java', 'mvn'].filter((t) => !onPath(t));
  if (missing.length) die(3, `${missing.join(' and ')} not found on PATH: the chart test needs Java 17+ and Maven (see docs/deploy.md)`);
}

function sourceHash() {
  const hash = createHash('sha256');
  const files = (dir) =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  for (const file of [path.join(project, 'pom.xml'), ...files(path.join(project, 'src')).sort()]) {
    hash.update(path.relative(project, file)).update('\0').update(fs.readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

function classpath() {
  if (!fs.existsSync(classpathFile)) return undefined;
  const jars = fs.readFileSync(classpathFile, 'utf8').trim().split(path.delimiter);
  return jars.every((jar) => fs.existsSync(jar)) ? [path.join(target, 'classes'), ...jars].join(path.delimiter) : undefined;
}

const built = (hash) => fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === hash && classpath();

/** Two jest workers may both find the build stale: one compiles, the other waits for it (a directory as the lock). */
function withBuildLock(fn) {
  const lock = path.join(project, '.build-lock');
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      if (Date.now() > deadline) die(1, `${lock} is still held after 5 minutes; remove it if no build runs`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

function build() {
  check();
  const hash = sourceHash();
  if (built(hash)) return;
  withBuildLock(() => {
    if (built(hash)) return;
    const mvn = (offline) =>
      spawnSync('mvn', ['-q', '-B', ...(offline ? ['-o'] : []), 'compile'], { cwd: project, stdio: offline ? 'ignore' : 'inherit' }).status;
    // Thrown, not exited: the lock is released on the way out.
    if (mvn(true) !== 0 && mvn(false) !== 0) throw new Error(`mvn compile failed in ${project}`);
    fs.writeFileSync(stampFile, hash);
  });
}

function run(outDir) {
  build();
  const cp = classpath();
  if (!cp) die(1, `${classpathFile} names jars that are not in the local Maven repository`);
  const input = fs.readFileSync(0);
  const r = spawnSync('java', ['-Xss4m', '-cp', cp, 'gateway.helm.Engine', outDir], { input, stdio: ['pipe', 'inherit', 'pipe'] });
  if (r.status !== 0) die(1, `the engine failed (exit ${r.status ?? r.signal}):\n${r.stderr}`);
}

const [command, arg] = process.argv.slice(2);
try {
  if (command === 'check') check();
  else if (command === 'build') build();
  else if (command === 'run' && arg) run(path.resolve(arg));
  else die(2, 'usage: helm-engine.mjs check | build | run <outDir>');
} catch (e) {
  die(1, e.message);
}
