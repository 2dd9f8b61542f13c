import '@gateway/service-kit/tracing-register';
import { runSpendingService } from '@gateway/spend';
import { claimTokenWorker } from '@gateway/upstreams';
import { createTextService, textService } from './index';

/** Fleet entry: the text routes as their own process. */
runSpendingService('text', (spend, _env, config) => {
  // No warm-up here: idle, the process holds no encoder (~150 MiB with its thread); a stream loads it as it opens.
  const releaseTokenWorker = claimTokenWorker();
  return {
    service: textService(createTextService(spend, { maxRequestBody: config.limits.max_request_body })),
    // The counting thread ends once the last count (a cut stream's, closed with its hold) is done.
    opened: [{ name: 'token worker', close: releaseTokenWorker }],
  };
});
