// Scenario 4 (ticket open): TICKET_USERS users (20,000) arrive within
// TICKET_ARRIVAL (10 s) for TICKET_SEATS seats (5,000), one request each,
// polling until decided. Every request is decided, exactly SEATS succeed and
// no seat is sold twice. Reports the time to sell out and the time from
// request to decision by the server's clock (decision_server_ms) and as the
// polling client saw it (decision_ms).
//
// Users arrive in groups of TICKET_GROUP (10) at a constant rate; a VU
// handles its group's requests and polls concurrently. One VU per user would
// need thousands of VUs, and on a small machine k6 itself would then be the
// bottleneck (measured: 3,000-8,000 VUs on 2 cores dropped a quarter to half
// of the arrivals).
//
// Users and tokens come from TICKET_USERS_FILE, written through the API by
// prepare-users.js (scripts/k6.sh ticket-open runs both).
//
// Variants: TICKET_LOTTERY=1 opens the sale at the end of the arrivals, so
// that every user arrives inside the pre-opening lottery window (accepted as
// WAITING, put in a random order at the opening); TICKET_POLL=hinted makes
// each poll wait for the previous answer's pollAfterMs instead of polling
// every TICKET_POLL_MS. `buyer_requests` counts the buyers' own HTTP
// requests (reserve and polls, not the setup's or the teardown's).
import http from 'k6/http';
import { check, fail } from 'k6';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';
import { Counter, Trend } from 'k6/metrics';
import { BASE, adminToken, auth, concert, createConcert, record, reserveAndWaitAsync, summary } from './lib.js';

const USERS = Number(__ENV.TICKET_USERS || 20000);
const SEATS = Number(__ENV.TICKET_SEATS || 5000);
const ARRIVAL = __ENV.TICKET_ARRIVAL || '10s';
// Clients poll once a second; the time to decision is measured by the
// server's clock, not by polling.
const POLL_MS = Number(__ENV.TICKET_POLL_MS || 1000);
const GROUP = Number(__ENV.TICKET_GROUP || 10);
const VUS = Number(__ENV.TICKET_VUS || 2000);
const LOTTERY = __ENV.TICKET_LOTTERY === '1';
const HINTED = __ENV.TICKET_POLL === 'hinted';

const tokens = new SharedArray('tokens', () => {
  const all = JSON.parse(open(__ENV.TICKET_USERS_FILE || fail('TICKET_USERS_FILE is required')));
  if (all.length < USERS) fail(`${__ENV.TICKET_USERS_FILE} holds ${all.length} users, ${USERS} needed`);
  return all.slice(0, USERS);
});

// The seat each user goes for: every seat is wanted by USERS/SEATS users
// and the wishes arrive in a shuffled (but reproducible) order, so seats keep
// selling through the whole burst instead of all in its first quarter.
const wanted = new SharedArray('wanted', () => {
  const order = Array.from({ length: USERS }, (_, i) => i % SEATS);
  let seed = 20261130;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
});

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '300s',
  teardownTimeout: '300s',
  scenarios: {
    // Exactly USERS arrivals (USERS / GROUP groups) spread evenly over ARRIVAL.
    ticket_open: {
      executor: 'constant-arrival-rate', rate: Math.ceil(USERS / GROUP), timeUnit: ARRIVAL, duration: ARRIVAL,
      preAllocatedVUs: VUS, maxVUs: VUS, gracefulStop: '120s',
    },
  },
  thresholds: {
    reservation_success: [`count==${SEATS}`],
    reservation_failed: [`count==${USERS - SEATS}`],
    // Every user arrives (a group k6 could not start in time would be missing).
    users_arrived: [`count==${USERS}`],
    checks: ['rate==1.0'],
    http_req_failed: ['rate<0.01'],
  },
};

const arrived = new Counter('users_arrived');
const buyerRequests = new Counter('buyer_requests');
const requestedAt = new Trend('requested_at');
const soldAt = new Trend('sold_at');
const decidedAt = new Trend('decided_at');

export function setup() {
  const admin = adminToken();
  // With the lottery, the sale opens when the last users have arrived.
  const arrivalMs = Number.parseFloat(ARRIVAL) * (ARRIVAL.endsWith('ms') ? 1 : ARRIVAL.endsWith('m') ? 60000 : 1000);
  const sale = LOTTERY
    ? { opensAt: new Date(Date.now() + arrivalMs + 2000).toISOString(), lotteryWindowSeconds: 3600 }
    : {};
  const { id, seats } = createConcert(admin, `ticket-open-${Date.now()}`, Math.ceil(SEATS / 100), Math.min(SEATS, 100), sale);
  if (seats.length !== SEATS) fail(`TICKET_SEATS must be a multiple of 100 or at most 100 (got ${SEATS})`);
  return { concertId: id, seats };
}

async function arrive(i, seats) {
  arrived.add(1);
  const outcome = await reserveAndWaitAsync(tokens[i], seats[wanted[i]], {
    timeoutMs: 90000, pollMs: POLL_MS, hinted: HINTED, expect: LOTTERY ? 'WAITING' : null, buyerRequests,
  });
  record(outcome);
  if (outcome && outcome.decidedAt !== undefined) {
    requestedAt.add(outcome.requestedAt);
    decidedAt.add(outcome.decidedAt);
    if (outcome.status === 'SUCCESS') soldAt.add(outcome.decidedAt);
  }
}

export default async function (data) {
  const first = exec.scenario.iterationInTest * GROUP;
  const group = [];
  for (let i = first; i < Math.min(first + GROUP, USERS); i += 1) group.push(arrive(i, data.seats));
  await Promise.all(group);
}

export function teardown(data) {
  const c = concert(data.concertId);
  // Each user sees only their own reservations: ask all of them.
  const confirmedSeats = [];
  for (let i = 0; i < USERS; i += 100) {
    const batch = tokens.slice(i, i + 100).map((t) => ['GET', `${BASE}/api/users/me/reservations?size=100`, null, auth(t)]);
    for (const r of http.batch(batch)) {
      for (const x of r.json()) if (x.status === 'CONFIRMED' && x.concertId === data.concertId) confirmedSeats.push(x.seatId);
    }
  }
  check(c, {
    'every seat RESERVED': (x) => x.reservedSeats === SEATS && x.availableSeats === 0,
    'confirmed reservations = seats': () => confirmedSeats.length === SEATS,
    'no seat confirmed twice': () => new Set(confirmedSeats).size === confirmedSeats.length,
  });
}

export const handleSummary = summary('ticket-open', (data) => {
  const v = (k) => (data.metrics[k] ? data.metrics[k].values : {});
  return {
    sell_out_ms: v('sold_at').max - v('requested_at').min,
    all_decided_ms: v('decided_at').max - v('requested_at').min,
    arrival_ms: v('requested_at').max - v('requested_at').min,
    dropped_iterations: v('dropped_iterations').count || 0,
    users_arrived: v('users_arrived').count || 0,
    buyer_requests: v('buyer_requests').count || 0,
    requests_per_buyer: (v('buyer_requests').count || 0) / USERS,
    lottery: LOTTERY,
    polling: HINTED ? 'hinted' : `every ${POLL_MS} ms`,
  };
});
