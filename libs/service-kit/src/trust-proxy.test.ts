import http from 'node:http';
import express from 'express';
import request from 'supertest';
import { trustProxySetting } from './trust-proxy';

/** The client address an app with this TRUST_PROXY sees, behind one proxy that appended the caller's address. */
async function clientAddress(trustProxy: string): Promise<string> {
  const app = express();
  app.set('trust proxy', trustProxySetting(trustProxy));
  app.get('/', (req, res) => void res.json({ ip: req.ip }));
  // A client that forges a first entry, then the ingress that appends the address it saw.
  return (await request(http.createServer(app)).get('/').set('x-forwarded-for', '198.51.100.7, 203.0.113.9')).body.ip;
}

describe('TRUST_PROXY as express reads it', () => {
  it('"1" trusts one hop: the address the ingress appended, not one the client forged (as a string it trusted nothing)', async () => {
    expect(trustProxySetting('1')).toBe(1);
    expect(await clientAddress('1')).toBe('203.0.113.9');
    expect(await clientAddress('2')).toBe('198.51.100.7');
  });

  it('"false" trusts no header; a CIDR or a name stays an address list', async () => {
    expect(await clientAddress('false')).toMatch(/127\.0\.0\.1|::1/);
    expect([trustProxySetting('true'), trustProxySetting('10.0.0.0/8, loopback')]).toEqual([true, '10.0.0.0/8, loopback']);
    expect(await clientAddress('loopback')).toBe('203.0.113.9');
  });
});
