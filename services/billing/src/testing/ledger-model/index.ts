/**
 * Test support for the ledger's property tests (ledger/properties.itest.ts): the commands, a harness over the ledger
 * under test, and the checker that runs batches of commands concurrently and holds every outcome and the ledger's
 * state after each batch against MONEY.md. No test framework here: a failed check throws.
 *
 * How a batch is judged (batch.ts, checks/). The commands of a batch run at once (Promise.all): their order is not
 * known, so each outcome is checked against bounds that hold in every order, computed from the state before the
 * batch and the other outcomes of the batch. With one command per batch the bounds are exact and every outcome is
 * the model's. After each batch the model (moved only by outcomes that passed their checks, and by the sweeps'
 * expiries) must equal the ledger: every hold's state and charge (and, while open, its kept checkpoint), and every
 * account's and key's credits, usage and held.
 */
export type { ScenarioOptions } from './batch';
export { type LedgerHarness, sqlHarness } from './harness';
export { type Cmd, LONG_TTL_MS, SHORT_TTL_MS, type Setup, type Snapshot, UNIT } from './model';
export { runScenario } from './scenario';
export { Tally } from './tally';
