import { explainUntrustedBroker } from './kafka-tls';

describe('explainUntrustedBroker', () => {
  it('names the CA setting when the broker’s certificate was not trusted, however deep the cause', () => {
    const tls = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const retries = new Error('Connection error: self-signed certificate', { cause: new Error('Connection error', { cause: tls }) });
    const explained = explainUntrustedBroker(retries) as Error;
    expect(explained.message).toBe(
      "bus: the kafka brokers' TLS certificate is not trusted (Connection error: self-signed certificate); KAFKA_SSL_CA_FILE must hold the CA that signed it",
    );
    expect(explained.cause).toBe(retries);
    expect(
      (explainUntrustedBroker(new Error('x', { cause: Object.assign(new Error('y'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }) })) as Error).message,
    ).toMatch(/KAFKA_SSL_CA_FILE/);
  });

  it('leaves every other error as it was', () => {
    const refused = new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9093');
    expect(explainUntrustedBroker(refused)).toBe(refused);
    expect(explainUntrustedBroker('text')).toBe('text');
  });
});
