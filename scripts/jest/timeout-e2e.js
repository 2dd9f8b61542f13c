// See timeout-integration.js: a whole gateway on a loaded 2-core machine needs more than jest's 5 s default.
jest.setTimeout(30_000);
