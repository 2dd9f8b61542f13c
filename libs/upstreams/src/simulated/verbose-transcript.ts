import type { TranscriptionRequest } from '../types';

/** Words per segment: Whisper cuts on pauses; a made-up transcript cuts every few words so a demo shows several. */
const WORDS_PER_SEGMENT = 8;
/** Without the gateway's measure (a direct call), each word is given this long. */
const SECONDS_PER_WORD = 0.4;

/** Seconds as OpenAI's verbose_json gives them: a number, here to the millisecond. */
const at = (s: number) => Math.round(s * 1000) / 1000;

/** "en" → "english": verbose_json names the language, where the request gives its ISO-639-1 code. */
function languageName(code: string): string {
  try {
    return (new Intl.DisplayNames(['en'], { type: 'language' }).of(code) ?? code).toLowerCase();
  } catch {
    return code;
  }
}

/**
 * OpenAI's verbose_json for a made-up transcript: `task`, `language`, `duration`, `text`, then `segments` (asked by
 * default, or with `segment` among the granularities) and `words` (with `word`), timed by spreading the words
 * evenly over the recording's measured length. The per-segment figures Whisper estimates (`avg_logprob`,
 * `compression_ratio`, `no_speech_prob`) are given as a certain, speech-only decode would have them, and `tokens`
 * is empty: the simulator decodes nothing. `duration` echoes the gateway's measure; the protocol reports no
 * duration to the gateway, so the charge rests on its own measure and the record says so.
 */
export function verboseTranscript(text: string, req: TranscriptionRequest) {
  const words = text.split(/\s+/).filter(Boolean);
  const duration = req.measuredSeconds ?? words.length * SECONDS_PER_WORD;
  const span = duration / words.length;
  const timed = words.map((word, i) => ({ word, start: at(i * span), end: at((i + 1) * span) }));
  const granularities = req.timestampGranularities ?? ['segment'];
  const segments = [];
  for (let i = 0; i < timed.length; i += WORDS_PER_SEGMENT) {
    const part = timed.slice(i, i + WORDS_PER_SEGMENT);
    segments.push({
      id: segments.length,
      seek: 0,
      start: part[0].start,
      end: part[part.length - 1].end,
      // Whisper's segment text starts with the space that separated it from the one before.
      text: ` ${part.map((w) => w.word).join(' ')}`,
      tokens: [] as number[],
      temperature: 0,
      avg_logprob: 0,
      compression_ratio: 1,
      no_speech_prob: 0,
    });
  }
  return {
    task: 'transcribe',
    language: languageName(req.language ?? 'en'),
    duration: at(duration),
    text,
    ...(granularities.includes('segment') ? { segments } : {}),
    ...(granularities.includes('word') ? { words: timed } : {}),
  };
}
