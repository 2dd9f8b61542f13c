export { PaidCall, type SpendDeps, type PaidCallSpec, type Answer } from './paid-call';
export { HoldCloser, type CloseDeps, type CallFacts, type Usage } from './hold-closer';
export { holdRecordToJSON, holdRecordFromJSON, type HoldRecord } from './hold-record';
export { guarded, type Releasable } from './guarded';
export { HOLD_CLOSE_RESERVE_MS, OpenHolds, closeHoldsBeforeBus } from './open-holds';
export { refuseOtherCategory } from './category';
export { Circuits, type CircuitState, type EndpointTally } from './circuits';
export { startHealthReporter, healthReport } from './health-reporter';
export { runSpendingService, type SpendingService } from './service-entry';
