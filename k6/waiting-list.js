// Scenario 6, the waiting list: TICKET_USERS fans (200) want TICKET_SEATS
// seats (30) in orders of 1-2, held for TICKET_HOLD_SECONDS (2). The
// concert sells out at once; from then on a fan whose order loses joins the
// waiting list for 1-2 seats. Seats come back all the time (holds cancelled
// or left to run out, sold seats cancelled as refunds) and are offered to
// the fans on the list, held for TICKET_OFFER_SECONDS (2): a fan confirms
// half of the offers and lets the rest run out (they go to the next fan).
// teardown() takes everyone off the list, waits for the last holds to end
// and checks that every seat ends sold to exactly one confirmed reservation
// or available, that every offer was a WAITING_LIST hold of the fan it was
// made to, and that every offer went to the earliest fan whose count fitted
// (no fan who joined earlier and waited for no more seats was passed over).
// scripts/k6.sh also checks the database (`ticket-api check`) during and
// after the run.
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { BASE, adminToken, auth, checkSoldOnce, concert, createUsers, reservationsOf, summary } from './lib.js';

const USERS = Number(__ENV.TICKET_USERS || 200);
const SEATS = Number(__ENV.TICKET_SEATS || 30);
const HOLD = Number(__ENV.TICKET_HOLD_SECONDS || 2);
const OFFER = Number(__ENV.TICKET_OFFER_SECONDS || 2);
const DURATION = __ENV.TICKET_DURATION || '20s';
const VUS = Number(__ENV.TICKET_VUS || 20);
// An entry that joined this soon before an offer may not have been visible
// to it yet (its insert had its id and not yet its commit): it is not
// counted as passed over.
const JOIN_SLACK_MS = 1000;

const outcomes = new Counter('waiting_list_outcomes');
const offersMade = new Counter('waiting_list_offers');

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  setupTimeout: '600s',
  teardownTimeout: '300s',
  scenarios: {
    fans: { executor: 'constant-vus', vus: VUS, duration: DURATION, exec: 'fan' },
  },
  thresholds: {
    checks: ['rate==1.0'],
    'waiting_list_outcomes{outcome:joined}': ['count>0'],
    // How a fan settles each offer is drawn at random, and a short run may
    // see only a handful of offers: that some were made is the threshold.
    waiting_list_offers: ['count>0'],
  },
};

export function setup() {
  const admin = adminToken();
  const perRow = Math.min(SEATS, 100);
  const body = {
    title: `waiting-list-${Date.now()}`, venue: 'k6 Hall', concertDate: '2099-06-01T19:00:00Z',
    rows: Math.ceil(SEATS / perRow), seatsPerRow: perRow, holdSeconds: HOLD, maxSeatsPerOrder: 2,
    maxSeatsPerUser: 100, waitingListOfferSeconds: OFFER,
  };
  const res = http.post(`${BASE}/api/concerts`, JSON.stringify(body), auth(admin));
  if (res.status !== 201) fail(`create concert: ${res.status} ${res.body}`);
  const id = res.json('id');
  const seats = http.get(`${BASE}/api/concerts/${id}/seats`).json().map((s) => s.id);
  return { concertId: id, seats, admin, tokens: createUsers(USERS, `wl${Date.now()}`) };
}

function decided(token, queueId) {
  const started = Date.now();
  while (Date.now() - started < 30000) {
    sleep(0.05);
    const s = http.get(`${BASE}/api/reservations/status/${queueId}`, { ...auth(token), tags: { name: 'status' } });
    const status = s.status === 200 ? s.json('status') : undefined;
    if (status === 'SUCCESS' || status === 'FAILED') return s.json();
  }
  return null;
}

// A hold of the fan's: confirmed (and maybe refunded later), cancelled, or
// left to run out.
function settle(token, reservationId, confirmShare, kind) {
  const choice = Math.random();
  if (choice < confirmShare) {
    const confirmed = http.post(`${BASE}/api/reservations/${reservationId}/confirm`, '{}', auth(token));
    check(confirmed, { 'confirm answers 200 or HOLD_EXPIRED': (r) => r.status === 200 || (r.status === 409 && r.json('code') === 'HOLD_EXPIRED') });
    outcomes.add(1, { outcome: confirmed.status === 200 ? `${kind}_confirmed` : `${kind}_expired` });
    if (confirmed.status === 200 && Math.random() < 0.3) {
      // A refund, a while later: the seats come back.
      sleep(Math.random() * HOLD);
      const refunded = http.post(`${BASE}/api/reservations/${reservationId}/cancel`, null, auth(token));
      check(refunded, { 'a refund answers 200': (r) => r.status === 200 });
    }
  } else if (choice < confirmShare + 0.2) {
    const cancelled = http.post(`${BASE}/api/reservations/${reservationId}/cancel`, null, auth(token));
    check(cancelled, { 'cancel answers 200 or HOLD_EXPIRED': (r) => r.status === 200 || (r.status === 409 && r.json('code') === 'HOLD_EXPIRED') });
    outcomes.add(1, { outcome: `${kind}_cancelled` });
  } else {
    outcomes.add(1, { outcome: `${kind}_expired` });
  }
}

// On the list: look for the offer until it comes or the fan gives up.
function waitForOffer(data, token) {
  const path = `${BASE}/api/concerts/${data.concertId}/waiting-list/me`;
  const started = Date.now();
  while (Date.now() - started < (OFFER + HOLD + 4) * 1000) {
    const me = http.get(path, { ...auth(token), tags: { name: 'waiting-list/me' } });
    if (!check(me, { 'a fan on the list sees their entry': (r) => r.status === 200 })) return;
    const offer = me.json('offer');
    if (offer && offer.status === 'HELD') {
      check(offer, { 'an offer is a WAITING_LIST hold': (o) => o.source === 'WAITING_LIST' && o.queueId === null });
      offersMade.add(1);
      settle(token, offer.reservationId, 0.5, 'offer');
      return;
    }
    if (me.json('status') !== 'WAITING') return;
    sleep(0.2);
  }
  // Tired of waiting: half leave, half stay on the list.
  if (Math.random() < 0.5) {
    const left = http.del(`${BASE}/api/concerts/${data.concertId}/waiting-list`, null, auth(token));
    check(left, { 'leaving answers 204, or 404 once offered': (r) => r.status === 204 || r.status === 404 });
  }
}

export function fan(data) {
  const user = ((__VU - 1) + VUS * __ITER) % data.tokens.length;
  const token = data.tokens[user];
  const size = 1 + Math.floor(Math.random() * 2);
  const start = Math.floor(Math.random() * (data.seats.length - size + 1));
  const seatIds = data.seats.slice(start, start + size);
  const res = http.post(`${BASE}/api/reservations`, JSON.stringify({ seatIds }), auth(token));
  check(res, { 'order accepted (201) or already in line (409)': (r) => r.status === 201 || r.status === 409 });
  if (res.status === 201) {
    const d = decided(token, res.json('queueId'));
    if (!check(d, { 'decided in time': (x) => x !== null })) return;
    if (d.status === 'SUCCESS') {
      settle(token, d.reservationId, 0.6, 'line');
      return;
    }
  }
  const joined = http.post(`${BASE}/api/concerts/${data.concertId}/waiting-list`, JSON.stringify({ seats: size }), auth(token));
  const code = joined.status === 201 ? null : joined.json('code');
  check(joined, {
    'joining answers 201, SEATS_AVAILABLE or ALREADY_ON_WAITING_LIST': (r) => r.status === 201
      || (r.status === 409 && (code === 'SEATS_AVAILABLE' || code === 'ALREADY_ON_WAITING_LIST')),
  });
  if (joined.status === 201) outcomes.add(1, { outcome: 'joined' });
  if (joined.status === 201 || code === 'ALREADY_ON_WAITING_LIST') waitForOffer(data, token);
}

function entries(data) {
  const all = [];
  for (let page = 0; ; page += 1) {
    const res = http.get(`${BASE}/api/concerts/${data.concertId}/waiting-list?page=${page}&size=1000`, auth(data.admin));
    if (res.status !== 200) fail(`the waiting list: ${res.status} ${res.body}`);
    const got = res.json();
    all.push(...got);
    if (got.length < 1000) return all;
  }
}

const ms = (text) => (text ? Date.parse(text.replace(/(\.\d{3})\d*/, '$1')) : undefined);

export function teardown(data) {
  // Everyone off the list, so that no new offer is made; the last holds
  // and offers end within their time, and the sweep writes them down.
  for (let i = 0; i < data.tokens.length; i += 50) {
    http.batch(data.tokens.slice(i, i + 50).map((t) => ['DELETE', `${BASE}/api/concerts/${data.concertId}/waiting-list`, null, auth(t)]));
  }
  const deadline = Date.now() + (Math.max(HOLD, OFFER) + 20) * 1000;
  let c = concert(data.concertId);
  while (c.heldSeats > 0 && Date.now() < deadline) {
    sleep(0.5);
    c = concert(data.concertId);
  }
  check(c, { 'no hold or offer is left once they have all run out': (x) => x.heldSeats === 0 });

  const reservations = reservationsOf(data.tokens);
  const userOf = new Map(reservations.map((r) => [r.reservationId, r]));
  const ours = reservations.filter((r) => r.concertId === data.concertId);
  const { sold } = checkSoldOnce(data.concertId, ours);

  const list = entries(data);
  const offered = list.filter((e) => e.status === 'OFFERED');
  const notTheirs = offered.filter((e) => {
    const r = userOf.get(e.reservationId);
    return !r || r.userId !== e.userId || r.source !== 'WAITING_LIST' || r.seats.length !== e.seats;
  });
  check(notTheirs, { "every offer is a WAITING_LIST hold of the fan's, of the seats they waited for": (n) => n.length === 0 });
  // Passed over: an entry that joined before the offered one, was still
  // waiting when the offer was made, and waited for no more seats than the
  // offer gave (so those seats would have met its count).
  const passedOver = [];
  for (const e of offered) {
    const at = ms(e.endedAt);
    for (const earlier of list) {
      if (earlier.id >= e.id) break;
      const stillWaiting = earlier.endedAt === null || ms(earlier.endedAt) > at;
      if (stillWaiting && earlier.seats <= e.seats && ms(earlier.joinedAt) < at - JOIN_SLACK_MS) {
        passedOver.push({ offered: e.id, passedOver: earlier.id });
      }
    }
  }
  check(passedOver, { 'every offer went to the earliest fan whose count fitted': (p) => p.length === 0 });
  if (passedOver.length > 0) console.log(JSON.stringify(passedOver.slice(0, 10)));
  console.log(JSON.stringify({
    entries: list.length, offered: offered.length, left: list.filter((e) => e.status === 'LEFT').length,
    reservations: ours.length, fromTheList: ours.filter((r) => r.source === 'WAITING_LIST').length,
    confirmed: ours.filter((r) => r.status === 'CONFIRMED').length, seatsSold: sold.size,
  }));
}

export const handleSummary = summary('waiting-list');
