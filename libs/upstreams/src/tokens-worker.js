// Counts tokens off the event loop for tokens.ts (countTokens): one encoder per worker, loaded once.
const { parentPort } = require('node:worker_threads');
const { getEncoding } = require('js-tiktoken');

const encoder = getEncoding('o200k_base');
parentPort.on('message', ({ id, text }) => {
  try {
    parentPort.postMessage({ id, count: encoder.encode(text).length });
  } catch (e) {
    parentPort.postMessage({ id, error: String(e?.message ? e.message : e) });
  }
});
