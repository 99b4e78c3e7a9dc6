// Scenario 2 (the original's): users spread over seats, one request each:
// every seat sold exactly once, every other request failed, and reserved
// seats = confirmed reservations = seats.
import { check } from 'k6';
import { adminToken, concert, confirmedCount, createConcert, createUsers, record, reserveAndWait, summary } from './lib.js';

const USERS = Number(__ENV.TICKET_USERS || 500);
const SEATS = Number(__ENV.TICKET_SEATS || 100);

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '300s',
  scenarios: {
    distributed: { executor: 'per-vu-iterations', vus: USERS, iterations: 1, maxDuration: '120s' },
  },
  thresholds: {
    reservation_success: [`count==${SEATS}`],
    reservation_failed: [`count==${USERS - SEATS}`],
    checks: ['rate==1.0'],
    http_req_failed: ['rate<0.01'],
  },
};

export function setup() {
  const admin = adminToken();
  const { id, seats } = createConcert(admin, `distributed-${Date.now()}`, 1, SEATS);
  return { concertId: id, seats, tokens: createUsers(USERS, `d${Date.now()}`) };
}

export default function (data) {
  record(reserveAndWait(data.tokens[__VU - 1], data.seats[(__VU - 1) % SEATS]));
}

export function teardown(data) {
  const c = concert(data.concertId);
  check(c, {
    'every seat RESERVED': (x) => x.reservedSeats === SEATS && x.availableSeats === 0,
    'confirmed reservations = seats': () => confirmedCount(data.tokens) === SEATS,
  });
}

export const handleSummary = summary('distributed');
