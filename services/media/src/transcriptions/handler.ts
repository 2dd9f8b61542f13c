import type { Router } from 'express';
import { GatewayError } from '@gateway/errors';
import { jsonBody, contextOf, validate } from '@gateway/service-kit';
import type { TranscriptionProtocol } from '@gateway/upstreams';
import { type AudioDeps, refuseUnpricedAudio } from '../audio-models';
import { decodeAudioData } from './audio-data';
import { measureSeconds } from './duration';
import { runTranscription } from './run-transcription';
import { transcriptionBody } from './schema';

const ROUTE = '/v1/audio/transcriptions';

/**
 * POST /v1/audio/transcriptions: the upstream's answer verbatim, with its content type and X-Gateway-Cost. The
 * route parses its own body, up to `maxAudioBody` (a recording in base64 outgrows the other routes' limit), so it
 * must be mounted before the router's general JSON parser.
 */
export function mountTranscriptions(r: Router, deps: AudioDeps<TranscriptionProtocol>, maxAudioBody: string): void {
  r.post(ROUTE, jsonBody(maxAudioBody), async (req, res) => {
    if (req.is('multipart/form-data')) {
      throw new GatewayError(
        'invalid_request',
        `${ROUTE} takes a JSON body with the recording base64 in input_audio {data, format}, not a multipart upload`,
      );
    }
    const body = validate(transcriptionBody, req.body);
    refuseUnpricedAudio(deps.registry, body.model, 'second', ROUTE);
    const audio = decodeAudioData(body.input_audio.data);
    const measuredSeconds = await measureSeconds(audio, body.input_audio.format);
    const request = {
      audio,
      format: body.input_audio.format,
      language: body.language,
      responseFormat: body.response_format,
      timestampGranularities: body.timestamp_granularities,
    };
    const { result, cost } = await runTranscription(contextOf(req), deps, { slug: body.model, request, measuredSeconds });
    res.status(200);
    res.setHeader('content-type', result.contentType);
    res.setHeader('x-gateway-cost', cost);
    // end(), not send(): send would add a charset to the upstream's content type, and the answer is verbatim.
    res.end(result.body);
  });
}
