/// <reference lib="dom" />
import { byId } from './lib/dom';
import { credentialGate, guardedSection } from './lib/gate';
import { loadActivity, wireActivity } from './console/activity';
import { loadBalance } from './console/balance';
import { loadCalls, wireCalls } from './console/calls';
import { loadJobs } from './console/jobs';

/**
 * The account console: every figure from the public /v1 routes with the pasted key. A refused key (401) takes the
 * page back to the form with the envelope's message; any other refusal shows in its own section.
 */
const gate = credentialGate('gateway.console.key', (key) => void load(key));

const section = (errorId: string, work: () => Promise<void>) => guardedSection(gate, errorId, work);

async function load(key: string): Promise<void> {
  const reloadJobs = async () => {
    await Promise.all([section('jobs-error', () => loadJobs(key, reloadJobs, section)), section('balance-error', () => loadBalance(key))]);
  };
  // The balance first: a wrong key is told at once, before the other sections ask.
  await section('balance-error', () => loadBalance(key));
  if (!gate.token()) return;
  await Promise.all([
    section('activity-error', () => loadActivity(key)),
    section('calls-error', () => loadCalls(key)),
    section('jobs-error', () => loadJobs(key, reloadJobs, section)),
  ]);
}

wireActivity();
wireCalls(gate.token, section);
byId('refresh').addEventListener('click', () => {
  const key = gate.token();
  if (key) void load(key);
});
