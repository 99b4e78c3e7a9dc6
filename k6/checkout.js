// Scenario 5, checkout: TICKET_USERS users (2,000) want TICKET_SEATS seats
// (500) in orders of 1-4 neighbouring seats, held for TICKET_HOLD_SECONDS
// (3). Of the holds they win, some are confirmed, some cancelled and some
// left to run out, while orders keep arriving for TICKET_DURATION (30s), so
// holds expire under load. A watcher checks every half second that the
// concert's seats add up (available + held + reserved = all, never a seat
// counted twice); teardown() waits for the last holds to end and checks that
// every seat ends sold to exactly one confirmed reservation or available,
// and that every expired hold's seats were offered again. scripts/k6.sh
// also checks the database (`ticket-api check`) during and after the run.
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { BASE, adminToken, auth, checkSoldOnce, concert, createUsers, reservationsOf, summary } from './lib.js';

const USERS = Number(__ENV.TICKET_USERS || 2000);
const SEATS = Number(__ENV.TICKET_SEATS || 500);
const HOLD = Number(__ENV.TICKET_HOLD_SECONDS || 3);
const DURATION = __ENV.TICKET_DURATION || '30s';
const VUS = Number(__ENV.TICKET_VUS || 50);

const outcomes = new Counter('checkout_outcomes');
const seatsCounted = new Counter('seat_count_mismatches');

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '600s',
  teardownTimeout: '300s',
  scenarios: {
    buyers: { executor: 'constant-vus', vus: VUS, duration: DURATION, exec: 'buy' },
    watcher: { executor: 'constant-vus', vus: 1, duration: DURATION, exec: 'watch' },
  },
  thresholds: {
    checks: ['rate==1.0'],
    seat_count_mismatches: ['count==0'],
    'checkout_outcomes{outcome:confirmed}': ['count>0'],
    'checkout_outcomes{outcome:expired}': ['count>0'],
    'checkout_outcomes{outcome:cancelled}': ['count>0'],
  },
};

export function setup() {
  const admin = adminToken();
  const perRow = Math.min(SEATS, 100);
  const body = {
    title: `checkout-${Date.now()}`, venue: 'k6 Hall', concertDate: '2099-06-01T19:00:00Z',
    rows: Math.ceil(SEATS / perRow), seatsPerRow: perRow, holdSeconds: HOLD, maxSeatsPerOrder: 4,
  };
  const res = http.post(`${BASE}/api/concerts`, JSON.stringify(body), auth(admin));
  if (res.status !== 201) fail(`create concert: ${res.status} ${res.body}`);
  const id = res.json('id');
  const seats = http.get(`${BASE}/api/concerts/${id}/seats`).json().map((s) => s.id);
  return { concertId: id, seats, tokens: createUsers(USERS, `co${Date.now()}`) };
}

function waitForDecision(token, queueId) {
  const started = Date.now();
  while (Date.now() - started < 30000) {
    sleep(0.05);
    const s = http.get(`${BASE}/api/reservations/status/${queueId}`, { ...auth(token), tags: { name: 'status' } });
    const status = s.status === 200 ? s.json('status') : undefined;
    if (status === 'SUCCESS' || status === 'FAILED') return s.json();
  }
  return null;
}

// One buyer's try: an order of 1-4 neighbouring seats, then, if won, a
// confirm (40 %), a cancel (30 %) or nothing until the hold runs out.
export function buy(data) {
  const user = ((__VU - 1) + VUS * __ITER) % data.tokens.length;
  const token = data.tokens[user];
  const size = 1 + Math.floor(Math.random() * 4);
  const start = Math.floor(Math.random() * (data.seats.length - size + 1));
  const seatIds = data.seats.slice(start, start + size);
  const res = http.post(`${BASE}/api/reservations`, JSON.stringify({ seatIds }), auth(token));
  // 409: this user already waits for one of these seats (a previous order),
  // or has as many seats as the cap per fan allows.
  if (!check(res, { 'order accepted (201) or already in line (409)': (r) => r.status === 201 || r.status === 409 })) return;
  if (res.status !== 201) return;
  const decided = waitForDecision(token, res.json('queueId'));
  if (!check(decided, { 'decided in time': (d) => d !== null })) return;
  if (decided.status === 'FAILED') {
    // USER_LIMIT_REACHED: two VUs that share a user ordered at once and
    // the second would have passed the cap per fan.
    check(decided, { 'a lost order lost a seat or passed the cap': (d) => d.reason === 'SEAT_TAKEN' || d.reason === 'USER_LIMIT_REACHED' });
    outcomes.add(1, { outcome: 'lost' });
    return;
  }
  const id = decided.reservationId;
  const reservation = http.get(`${BASE}/api/reservations/${id}`, auth(token)).json();
  check(reservation, {
    'a won order holds every seat it asked for': (r) => r.status === 'HELD'
      && JSON.stringify(r.seats.map((s) => s.seatId)) === JSON.stringify(seatIds),
  });
  const choice = Math.random();
  if (choice < 0.4) {
    sleep(Math.random() * HOLD * 0.3);
    const confirmed = http.post(`${BASE}/api/reservations/${id}/confirm`, JSON.stringify({ paymentReference: `k6-${id}` }), auth(token));
    // Late by the client's clock is possible: then it must say so.
    check(confirmed, { 'confirm answers 200 or HOLD_EXPIRED': (r) => r.status === 200 || (r.status === 409 && r.json('code') === 'HOLD_EXPIRED') });
    outcomes.add(1, { outcome: confirmed.status === 200 ? 'confirmed' : 'expired' });
  } else if (choice < 0.7) {
    const cancelled = http.post(`${BASE}/api/reservations/${id}/cancel`, null, auth(token));
    check(cancelled, { 'cancel answers 200': (r) => r.status === 200 });
    outcomes.add(1, { outcome: 'cancelled' });
  } else {
    outcomes.add(1, { outcome: 'expired' });
  }
}

export function watch(data) {
  const c = concert(data.concertId);
  const sum = c.availableSeats + c.heldSeats + c.reservedSeats;
  if (sum !== data.seats.length) seatsCounted.add(1);
  check(c, { 'seats add up (available + held + reserved = all)': () => sum === data.seats.length });
  sleep(0.5);
}

export function teardown(data) {
  // The last holds end within HOLD seconds; the sweep writes them within a few more.
  const deadline = Date.now() + (HOLD + 20) * 1000;
  let c = concert(data.concertId);
  while (c.heldSeats > 0 && Date.now() < deadline) {
    sleep(0.5);
    c = concert(data.concertId);
  }
  check(c, { 'no hold is left once they have all run out': (x) => x.heldSeats === 0 });
  const ours = reservationsOf(data.tokens).filter((r) => r.concertId === data.concertId);
  const { sold, seats } = checkSoldOnce(data.concertId, ours);
  check(c, { 'reserved seats = seats of confirmed reservations': (x) => x.reservedSeats === sold.size });
  // An expired hold's seats were offered again: each is available now, or
  // in a reservation made after that hold ended.
  const expired = ours.filter((r) => r.status === 'EXPIRED');
  const notOffered = expired.filter((r) => r.seats.some((s) => {
    const now = seats.find((x) => x.id === s.seatId);
    if (now && now.status === 'AVAILABLE') return false;
    return !ours.some((o) => o.reservationId > r.reservationId && o.seats.some((x) => x.seatId === s.seatId));
  }));
  check(notOffered, { "every expired hold's seats were offered again": (n) => n.length === 0 });
  check(expired, { 'some holds expired': (e) => e.length > 0 });
  console.log(JSON.stringify({
    reservations: ours.length, confirmed: ours.filter((r) => r.status === 'CONFIRMED').length,
    cancelled: ours.filter((r) => r.status === 'CANCELLED').length, expired: expired.length, seatsSold: sold.size,
  }));
}

export const handleSummary = summary('checkout');
