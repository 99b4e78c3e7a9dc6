// Step one of scenario 4 (ticket-open.js): signs up and logs in TICKET_USERS
// users through the API and writes their tokens, as a JSON array, to
// TICKET_USERS_FILE. The scenario loads that file once into memory shared by
// all its VUs; returning 20,000 tokens from its own setup() would copy them
// into each of thousands of VUs. Against a long-lived stack the file can be
// reused by later runs until the tokens expire.
import { fail } from 'k6';
import { createUsers } from './lib.js';

const USERS = Number(__ENV.TICKET_USERS || 20000);
const FILE = __ENV.TICKET_USERS_FILE || fail('TICKET_USERS_FILE is required');

export const options = {
  // Two Argon2 hashes per user (sign-up and login), bounded by the API's cores.
  setupTimeout: __ENV.TICKET_PREPARE_TIMEOUT || '1800s',
  scenarios: { prepare: { executor: 'shared-iterations', vus: 1, iterations: 1 } },
};

export function setup() {
  const started = Date.now();
  const tokens = createUsers(USERS, `open${Date.now()}`);
  return { tokens, seconds: (Date.now() - started) / 1000 };
}

export default function () {}

export function handleSummary(data) {
  const { tokens, seconds } = data.setup_data;
  return {
    [FILE]: JSON.stringify(tokens),
    stdout: `prepared ${tokens.length} users in ${seconds.toFixed(1)} s\n`,
  };
}
