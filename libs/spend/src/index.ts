export { PaidCall, type SpendDeps, type PaidCallSpec, type Usage, type Answer } from './paid-call';
export { Circuits, type CircuitState } from './circuits';
