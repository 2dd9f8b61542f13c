export type { BillingPort, KeyIdentity, HoldRequest, Hold } from './port';
export { createBillingHttpClient } from './http';
export * as internalApi from './contract';
