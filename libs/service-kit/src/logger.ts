import pino from 'pino';

export type Logger = pino.Logger;

/**
 * Never written to a log, wherever a caller puts them: credentials in headers (a client's API key, the admin token,
 * a provider's key) and secrets by name (webhook secrets, API keys). pino replaces them before a line is written.
 */
export const REDACTED_PATHS = [
  ...['.authorization', '["x-api-key"]', '.cookie', '["proxy-authorization"]'].flatMap((h) => [
    `headers${h}`,
    `req.headers${h}`,
    `request.headers${h}`,
    `err.headers${h}`,
    `*.headers${h}`,
  ]),
  ...['authorization', 'apiKey', 'api_key', 'secret', 'webhookSecret', 'webhook_secret', 'adminToken'].flatMap((f) => [f, `*.${f}`]),
];

export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
