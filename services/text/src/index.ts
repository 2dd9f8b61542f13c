import { Router } from 'express';
import express from 'express';
import type { SpendDeps } from '@gateway/spend';
import { textProtocols } from '@gateway/upstreams';
import { mountChatCompletions } from './chat-completions/handler';

export interface TextService {
  /** Keyed text routes under /v1. */
  router: Router;
}

export function createTextService(deps: SpendDeps): TextService {
  const router = Router();
  router.use(express.json({ limit: '8mb' }));
  const protocolOf = textProtocols();
  mountChatCompletions(router, { ...deps, protocolOf });
  return { router };
}
