export {
  AddressRefusedError,
  checkTarget,
  pinnedAgent,
  type PinnedTarget,
  type ResolvedAddress,
  type Resolver,
  systemResolver,
} from './address-guard';
export { JITTER, MAX_RETRY_DELAY_MS, retryDelayMs } from './backoff';
export {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
  type WebhookSettings,
  webhookSettingsSchema,
} from './dispatcher';
export { type AttemptOutcome, type AttemptResult, DEFAULT_ATTEMPT_TIMEOUT_MS, MAX_ANSWER_BYTES, sendWebhook } from './send';
export {
  type HeaderSource,
  signedHeaders,
  type VerifyResult,
  verifyWebhook,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookSignature,
} from './sign';
