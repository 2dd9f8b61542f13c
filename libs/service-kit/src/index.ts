export { createLogger, type Logger } from './logger';
export { INTERNAL, contextOf, type RequestContext, newRequestId, requireInternalToken } from './context';
export { createMetrics, type Metrics } from './metrics';
export { createServiceApp, createOpsApp, finishApp, type OpsAppOptions } from './app';
export { serve, serveFleetProcess, type ListenEnv, type Served, type ServeOptions } from './serve';
export { validate, checkJsonBody } from './validate';
export { runMain } from './run-main';
export { clientGone } from './client-gone';
