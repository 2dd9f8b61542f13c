export {
  EDGE,
  METRICS_PORT_OFFSET,
  SERVICES,
  SERVICE_NAMES,
  ADMIN_OWNER,
  serviceEntry,
  startsAfter,
  actsForCaller,
  publicOwner,
  keyedOwner,
  type ServiceEntry,
  type ServiceName,
} from './services';
export { dependencyOrder, startOrder } from './start-order';
export {
  PORT_HANDOFF_ENV,
  isReleaseRequest,
  isReleasedAnswer,
  releaseRequest,
  releasedAnswer,
  type PortMessage,
} from './port-handoff';
export { holdPort, type HoldPortOptions } from './hold-port';
export {
  bundleCommand,
  EMBEDDED_COMMAND,
  EMBEDDED_MALLOC_TUNABLES,
  EMBEDDED_V8_FLAGS,
  migrateCommand,
  serviceCommand,
  sourceCommand,
} from './commands';
export { CONNECT_TIMEOUT_MS, EJECT_MS, POOLED_IDLE, POOLED_IDLE_MS, ReplicaSet, addressList, neverReached, type ReplicaSetOptions } from './replicas';
export {
  MAX_REPLICAS,
  REPLICA_PORT_STRIDE,
  parseReplicas,
  replicaName,
  replicaPort,
  type FleetProcessName,
  type ReplicaCounts,
} from './fleet-replicas';
