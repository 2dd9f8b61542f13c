import type { Logger } from './logger';

/**
 * Entry-point discipline shared by every process: a config or environment error prints its message and
 * exits 1; SIGTERM/SIGINT drain through `stop` and exit 0.
 */
export function runMain(name: string, start: () => Promise<{ stop: () => Promise<void>; logger: Logger }>): void {
  start().then(
    ({ stop, logger }) => {
      let stopping = false;
      const onSignal = (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'shutting down');
        stop().then(
          () => process.exit(0),
          (err) => {
            logger.error({ err }, 'unclean shutdown');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => onSignal('SIGTERM'));
      process.on('SIGINT', () => onSignal('SIGINT'));
    },
    (err: Error) => {
      // Errors the operator fixes, not bugs: the message is the whole story (a schema behind says which command to run).
      const isConfig = err?.name === 'ConfigError' || err?.name === 'SchemaBehindError';
      process.stderr.write(`${name}: ${isConfig ? err.message : (err?.stack ?? String(err))}\n`);
      process.exit(1);
    },
  );
}
