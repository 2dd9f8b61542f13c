/**
 * @gateway/billing/testing: for the e2e suites and benchmarks, never product code. Besides the ledger fixtures, the
 * ledger's own key hash (a suite looks for a key's rows on disk) and its write-behind step (`pnpm bench ledger`
 * measures it alone, without a whole gateway around it).
 */
export { closeEvent, holdFacts, payer, placeHold, usageRecord, type Payer, type PlacedHold } from './ledger-fixtures';
export { hashSecret } from '../ledger/ids';
export { writeBatch } from '../ledger/memory/write-behind';
export { readJournal } from '../ledger/memory/journal';
export { journalDirOf } from '../ledger/memory/memory-ledger';
export type { LedgerRecord } from '../ledger/memory/records';
