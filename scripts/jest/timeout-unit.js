// Unit tests share the run's two cores with whole gateways in the e2e project: one that takes under a second idle
// has taken over 5 s there (jest's default). 15 s still ends a hung test quickly. See timeout-integration.js.
jest.setTimeout(15_000);
