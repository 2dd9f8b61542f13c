import '@gateway/service-kit/tracing-register';
import { runSpendingService } from '@gateway/spend';
import { claimTokenWorker, warmTokenizer } from '@gateway/upstreams';
import { createTextService, textService } from './index';

/** Fleet entry: the text routes as their own process. */
runSpendingService('text', (spend, _env, config) => {
  const releaseTokenWorker = claimTokenWorker();
  warmTokenizer();
  return {
    service: textService(createTextService(spend, { maxRequestBody: config.limits.max_request_body })),
    // The counting thread ends once the last count (a cut stream's, closed with its hold) is done.
    opened: [{ name: 'token worker', close: releaseTokenWorker }],
  };
});
