// Scenario 1 (the original's): many users hammer one seat for a while, each
// polling its request to a decision before trying again. Exactly one ever
// succeeds; every other request fails; no double booking.
import { check } from 'k6';
import { adminToken, concert, confirmedCount, createConcert, createUsers, record, reserveAndWait, summary } from './lib.js';

const VUS = Number(__ENV.TICKET_VUS || 100);

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '300s',
  scenarios: {
    contention: { executor: 'constant-vus', vus: VUS, duration: __ENV.TICKET_DURATION || '60s' },
  },
  thresholds: {
    reservation_success: ['count==1'],
    checks: ['rate==1.0'],
    http_req_failed: ['rate<0.01'],
    decision_ms: ['p(99)<5000'],
  },
};

export function setup() {
  const admin = adminToken();
  const { id, seats } = createConcert(admin, `contention-${Date.now()}`, 1, 1);
  return { concertId: id, seat: seats[0], tokens: createUsers(VUS, `c${Date.now()}`) };
}

export default function (data) {
  record(reserveAndWait(data.tokens[(__VU - 1) % data.tokens.length], data.seat));
}

export function teardown(data) {
  const c = concert(data.concertId);
  check(c, {
    'the seat is RESERVED': (x) => x.reservedSeats === 1 && x.availableSeats === 0,
    'exactly one CONFIRMED reservation': () => confirmedCount(data.tokens) === 1,
  });
}

export const handleSummary = summary('contention');
