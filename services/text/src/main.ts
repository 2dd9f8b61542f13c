import '@gateway/service-kit/tracing-register';
import { runSpendingService } from '@gateway/spend';
import { warmTokenizer } from '@gateway/upstreams';
import { createTextService, textService } from './index';

/** Fleet entry: the text routes as their own process. */
runSpendingService('text', (spend, _env, config) => {
  warmTokenizer();
  return { service: textService(createTextService(spend, { maxRequestBody: config.limits.max_request_body })) };
});
