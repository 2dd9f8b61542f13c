export type {
  BillingPort,
  KeyIdentity,
  HoldRequest,
  Hold,
  JobSettings,
  JobSettingsPort,
  RecordedAnswer,
  ReplayClaim,
  ReplayClaimRequest,
  ReplayFinish,
  ReplayPort,
} from './port';
export { REPLAY_WINDOW_MS, MAX_RECORDED_ANSWER_BYTES } from './port';
export { createBillingHttpClient } from './http';
export * as internalApi from './contract';
