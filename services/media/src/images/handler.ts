import type { Router } from 'express';
import type { ProviderConfig, ResolvedModel } from '@gateway/config';
import { affordableImages, imageCharge, imageWorstCase, resolveShape } from '@gateway/pricing';
import { clientGone, contextOf, validate } from '@gateway/service-kit';
import { PaidCall, guarded, refuseOtherCategory, type SpendDeps } from '@gateway/spend';
import type { ImageProtocol } from '@gateway/upstreams';
import { keepImages, type KeepDeps } from './keep';
import { imagesBody } from './schema';
import { upstreamShape } from './shape';

export interface ImagesDeps extends SpendDeps, KeepDeps {
  /** GATEWAY_PUBLIC_URL, without a trailing slash. */
  publicUrl: string;
  /** The image capability of a provider kind; undefined where the kind has none. */
  protocolOf(kind: ProviderConfig['kind']): ImageProtocol | undefined;
}

/**
 * POST /v1/images/generations and POST /v1/images: hold n images at the rate of the resolution asked, generate
 * with failover, keep each image behind a /v1/files reference, settle for the images returned. The answer names
 * only the gateway's URLs; the upstream's never leave the media service.
 */
export function mountImages(r: Router, deps: ImagesDeps): void {
  r.post(['/v1/images/generations', '/v1/images'], async (req, res) => {
    const body = validate(imagesBody, req.body);
    refuseOtherCategory(deps.registry, body.model, 'image', req.path);
    const ctx = contextOf(req);
    const shape = resolveShape(body);
    // Under a max_cost a model makes the images the cap affords, at most n: one image above it is refused (402).
    const cap = body.max_cost;
    const imagesOn = (m: ResolvedModel) => (cap === undefined ? body.n : Math.min(body.n, affordableImages(m, shape.resolution, cap) ?? body.n));
    const paid = await PaidCall.begin(deps, {
      ctx,
      category: 'image',
      slugs: [body.model],
      streamed: false,
      provider: body.provider,
      worstCase: (m) => imageWorstCase(m, body.n, shape.resolution),
      maxCostNano: cap,
      leastCost: (m) => imageCharge(m, 1, shape.resolution),
    });
    // A client gone before the answer: the upstream call stops and nothing is charged.
    const client = clientGone(res);
    try {
      await guarded(paid, async () => {
        const { result, model } = await paid.call(async (m, ep) => {
          const protocol = deps.protocolOf(ep.provider.kind);
          // A provider kind without images fails over like any broken endpoint.
          if (!protocol) throw new Error(`provider kind ${ep.provider.kind} cannot serve image models`);
          const request = { prompt: body.prompt, n: imagesOn(m), ...upstreamShape(shape), quality: body.quality, referenceUrls: body.reference_urls };
          return protocol.generateImages(ep, { ...request, extra: body.extra }, { signal: client.signal, requestId: ctx.requestId });
        }, client.signal);
        // The protocols never answer more than they were asked; were one to, the extra images are neither kept nor charged.
        const files = await keepImages(deps, ctx, result.images.slice(0, imagesOn(model)));
        // As PaidCall does up to the answer: a client gone before it could be told of the images is not charged.
        if (client.signal.aborted) {
          await paid.release('client_closed');
          return;
        }
        const cost = await paid.settle({
          chargeNano: imageCharge(model, files.length, shape.resolution),
          tokensPrompt: 0,
          tokensCompletion: 0,
          finishReason: null,
          mediaCompletion: files.length,
        });
        res.setHeader('x-gateway-cost', cost);
        res.json({
          created: Math.floor(Date.now() / 1000),
          model: model.config.id,
          data: files.map((f) => ({ url: `${deps.publicUrl}/v1/files/${f.id}` })),
        });
      });
    } finally {
      client.release();
    }
  });
}
