/**
 * OpenTelemetry, started before anything else is loaded so http, express, pg, ioredis and undici get patched.
 * Import this module first in every entry point. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, so tests and
 * laptops pay nothing. The service name comes from OTEL_SERVICE_NAME or the entry point's folder.
 */
import path from 'node:path';

if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation } = require('@opentelemetry/instrumentation-express') as typeof import('@opentelemetry/instrumentation-express');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const entry = process.argv[1] ?? '';
  const service = process.env.OTEL_SERVICE_NAME ?? /services[\\/]([^\\/]+)[\\/]/.exec(entry)?.[1] ?? path.basename(entry, path.extname(entry));
  process.env.OTEL_SERVICE_NAME = `model-gateway-${service}`;
  const sdk = new NodeSDK({
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      // Health and metrics scrapes would drown the traces that matter.
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)/.test(req.url ?? '') }),
      new ExpressInstrumentation(),
      new PgInstrumentation(),
      new IORedisInstrumentation(),
      new UndiciInstrumentation(),
    ],
  });
  sdk.start();
  process.once('beforeExit', () => void sdk.shutdown());
}
