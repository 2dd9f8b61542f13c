// The Portkey gateway (@portkey-ai/gateway, its own `build/start-server.js`, the script its `portkey` bin runs) in
// this process, with one fix so its pass-through routes answer at all. Arguments are Portkey's own:
// `node bench/portkey-server.mjs --headless --port=8787`. Prints `portkey ready` once Portkey's start script is done.
//
// Why the fix: Portkey serves through @hono/node-server, which replaces the global Response with a lightweight class.
// That class, given `init` headers that are already a Headers object (Portkey re-wraps an upstream answer with
// `new Response(body, upstreamResponse)` wherever no transform applies), keeps that very object; a fetch() answer's
// headers are immutable, Portkey then appends its x-portkey-* headers to them, and the call fails 500 "Something
// went wrong" (`TypeError: immutable`). With @portkey-ai/gateway 1.15.2 and @hono/node-server 1.19.19 on Node 20,
// unpatched, chat and image generation answer 200 but streamed chat and embeddings fail on every request. The fix
// copies such headers, as the class already does for its own kind of `init`; nothing else changes.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const pkg = require.resolve('@portkey-ai/gateway/package.json');
const NativeResponse = globalThis.Response;

/** The lightweight class, with `init` headers copied whenever they are a Headers object of someone else's. */
const fixed = (Lightweight) =>
  class PortkeyBenchResponse extends Lightweight {
    constructor(body, init) {
      if (init && typeof init === 'object' && !(init instanceof Lightweight) && init.headers instanceof Headers)
        init = { status: init.status, statusText: init.statusText, headers: new Headers(init.headers) };
      super(body, init);
    }
  };

// Installed the moment @hono/node-server defines its class as the global (inside serve(), before the first request
// can arrive: Portkey's start script goes on, with its start-up animation, for a while after it listens).
const define = Object.defineProperty;
Object.defineProperty = function defineProperty(target, key, descriptor) {
  if (target === globalThis && key === 'Response' && typeof descriptor?.value === 'function' && descriptor.value !== NativeResponse) {
    Object.defineProperty = define;
    return define(target, key, { ...descriptor, value: fixed(descriptor.value) });
  }
  return define(target, key, descriptor);
};

await import(pathToFileURL(pkg.replace(/package\.json$/, 'build/start-server.js')).href);
// Started: the bench waits for this line (Portkey's own output is a terminal animation).
process.stdout.write('portkey ready\n');
