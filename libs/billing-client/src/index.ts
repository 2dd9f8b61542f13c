export type { BillingPort, KeyIdentity, HoldRequest, Hold, JobSettings, JobSettingsPort } from './port';
export { createBillingHttpClient } from './http';
export * as internalApi from './contract';
