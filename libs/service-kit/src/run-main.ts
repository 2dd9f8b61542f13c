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
      const isConfig = err?.name === 'ConfigError';
      process.stderr.write(`${name}: ${isConfig ? err.message : (err?.stack ?? String(err))}\n`);
      process.exit(1);
    },
  );
}
