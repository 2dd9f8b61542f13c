import '@gateway/service-kit/src/tracing-register';
import { runSpendingService } from '@gateway/spend';
import { claimTokenWorker, warmTokenizer } from '@gateway/upstreams';
import { createTextService } from './index';

/** Fleet entry: the text routes as their own process. */
runSpendingService('text', (spend, _env, config) => {
  const releaseTokenWorker = claimTokenWorker();
  warmTokenizer();
  return { ...createTextService(spend, { maxRequestBody: config.limits.max_request_body }), close: releaseTokenWorker };
});
