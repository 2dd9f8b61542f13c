import type { Router } from 'express';
import { contextOf, validate } from '@gateway/service-kit';
import type { SpeechProtocol } from '@gateway/upstreams';
import { type AudioDeps, refuseUnpricedAudio } from '../audio-models';
import { withAudioClient } from './audio-client';
import { runSpeech } from './run-speech';
import { speechBody } from './schema';

const ROUTE = '/v1/audio/speech';

/** POST /v1/audio/speech: the audio bytes as they arrive, with the upstream's Content-Type and X-Gateway-Cost. */
export function mountSpeech(r: Router, deps: AudioDeps<SpeechProtocol>): void {
  r.post(ROUTE, async (req, res) => {
    const body = validate(speechBody, req.body);
    refuseUnpricedAudio(deps.registry, body.model, 'character', ROUTE);
    const request = { input: body.input, voice: body.voice, responseFormat: body.response_format, speed: body.speed };
    await withAudioClient(res, (client) =>
      runSpeech(contextOf(req), deps, { slug: body.model, provider: body.provider, maxCost: body.max_cost, request }, client),
    );
  });
}
