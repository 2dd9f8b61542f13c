import type { GatewayService } from '@gateway/service-kit';
import type { TextService } from './service';

/** Text in the one lifecycle: routes only; what it spends is closed by the spending part (libs/spend spendPart). */
export function textService(text: TextService): GatewayService {
  return { name: 'text', routers: { public: text.router } };
}
