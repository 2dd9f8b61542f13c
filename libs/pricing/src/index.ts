/**
 * Every price rule of the gateway: for each category the worst case a call holds and the charge it settles, in
 * exact integer nano-USD (@gateway/money). The routes, the job worker and the MCP quote all call these functions,
 * so a quote is what a call reserves and a hold always covers the charge of what it reserved for.
 */
export { DEFAULT_OUTPUT_CAP, outputCap } from './output-cap';
export { maxTokensOf } from './token-bound';
export { cacheDiscount, dearestPromptRate, FRAMING_TOKENS_PER_MESSAGE, type PromptCache, promptText, textCharge, textWorstCase } from './text';
export { type InputTexts, inputCharge, inputWorstCase, maxInputTokens } from './input';
export { imageCharge, imageRate, imageWorstCase } from './image';
export { type ImageShape, resolveShape, type ShapeFields } from './image-shape';
export { listedRates } from './listed';
export { billedSeconds, characterCount, speechCharge, transcriptionCharge } from './audio';
export { FALLBACK_DURATION_SECONDS, heldSeconds, millisToSeconds, secondsToMillis, videoCharge, videoWorstCase } from './video';
export { affordableImages, affordableOutput, type TextLoad, textLeastCost } from './cost-cap';
