import { errorMessage } from './errors';

/** Node's words for a certificate it did not trust (its messages and codes), anywhere in an error's causes. */
const UNTRUSTED =
  /self[- ]signed certificate|unable to (get local issuer|get issuer|verify the first) certificate|certificate has expired|certificate is not yet valid|certificate signature failure|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE/i;

function messages(err: unknown, depth = 0): string {
  if (depth > 5 || !(err instanceof Error)) return errorMessage(err);
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return `${err.message} ${code} ${err.cause === undefined ? '' : messages(err.cause, depth + 1)}`;
}

/**
 * kafkajs reports a broker certificate the client does not trust as `Connection error: self-signed certificate`,
 * after minutes of retries, like any other unreachable broker. Said plainly, with the setting that decides it, an
 * operator looks at the CA file rather than the network.
 */
export function explainUntrustedBroker(err: unknown): unknown {
  if (!UNTRUSTED.test(messages(err))) return err;
  return new Error(
    `bus: the kafka brokers' TLS certificate is not trusted (${errorMessage(err)}); KAFKA_SSL_CA_FILE must hold the CA that signed it`,
    { cause: err },
  );
}
