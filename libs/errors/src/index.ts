export { GatewayError, type ErrorCode, statusOf } from './gateway-error';
export { errorEnvelope, sendError, errorHandler, toGatewayError } from './envelope';
