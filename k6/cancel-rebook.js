// Scenario 3 (the original's): book 10, cancel 5; those 5 seats are
// AVAILABLE again and booking them again succeeds.
import http from 'k6/http';
import { check } from 'k6';
import { BASE, adminToken, auth, concert, createConcert, createUsers, reserveAndWait, summary } from './lib.js';

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '120s',
  scenarios: { cancel_rebook: { executor: 'shared-iterations', vus: 1, iterations: 1 } },
  thresholds: { checks: ['rate==1.0'] },
};

export function setup() {
  const admin = adminToken();
  // One user books all ten: the concert lets a fan have ten (the default
  // cap per fan is the order size, 4).
  const { id, seats } = createConcert(admin, `cancel-${Date.now()}`, 1, 10, { maxSeatsPerUser: 10 });
  return { concertId: id, seats, tokens: createUsers(2, `r${Date.now()}`) };
}

export default function (data) {
  const [first, second] = data.tokens;
  const booked = data.seats.map((seat) => reserveAndWait(first, seat));
  check(booked, { 'all 10 booked': (b) => b.every((o) => o && o.status === 'SUCCESS') });

  const cancelled = booked.slice(0, 5).map((o) =>
    http.post(`${BASE}/api/reservations/cancel`, JSON.stringify({ reservationId: o.reservationId }), auth(first)));
  check(cancelled, { '5 cancelled': (rs) => rs.every((r) => r.status === 200 && r.json('status') === 'CANCELLED') });

  const available = http.get(`${BASE}/api/concerts/${data.concertId}/seats?status=AVAILABLE`).json().map((s) => s.id);
  const freed = data.seats.slice(0, 5);
  check(available, { 'the 5 seats are AVAILABLE again': (a) => a.length === 5 && freed.every((s) => a.includes(s)) });

  const rebooked = freed.map((seat) => reserveAndWait(second, seat));
  check(rebooked, { 're-booking them succeeds': (b) => b.every((o) => o && o.status === 'SUCCESS') });
}

export function teardown(data) {
  check(concert(data.concertId), { 'all 10 seats RESERVED again': (c) => c.reservedSeats === 10 });
}

export const handleSummary = summary('cancel-rebook');
