export { createLogger, type Logger } from './logger';
export { INTERNAL, contextOf, type RequestContext, newRequestId } from './context';
export { matchesSecret, requireInternalToken } from './internal-token';
export { trustProxySetting } from './trust-proxy';
export { createMetrics, type Metrics } from './metrics';
export {
  createServiceApp,
  createOpsApp,
  finishApp,
  singleMiddlewareListener,
  inTurn,
  serviceListener,
  type AppListener,
  type OpsAppOptions,
} from './app';
export {
  CLOSE_RESERVE_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  listenOptionsOf,
  serve,
  serveFleetProcess,
  type ListenEnv,
  type Served,
  type ServeOptions,
} from './serve';
export type { Dependencies } from './dependencies';
export { validate, checkJsonBody } from './validate';
export { jsonBody } from './json-body';
export { exactRoutes, type ExactRoutes, type PostRoutes, type RouteHandler } from './exact-routes';
export { sendJson } from './send-json';
export { runMain } from './run-main';
export { clientGone, onClientGone } from './client-gone';
export { inStartOrder, type GatewayService, type Lifecycle, type ServiceRouters } from './lifecycle';
export { startParts, type StartedParts } from './run-parts';
export { busPart, type ConsumingBus } from './bus-part';
export { reachableUrl, startAndServe, type RunningProcess } from './serve-parts';
export { internalListener, runFleetProcess, type FleetProcess } from './fleet-process';
