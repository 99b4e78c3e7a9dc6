// Shared helpers for the k6 scenarios: every scenario builds its own data
// through the API (admin login, concert, users, tokens) and verifies the
// invariants through the API at the end.
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';

export const BASE = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const JSON_HEADERS = { 'Content-Type': 'application/json' };

export function auth(token) {
  return { headers: { ...JSON_HEADERS, Authorization: `Bearer ${token}` } };
}

export function login(nickName, password) {
  const res = http.post(`${BASE}/api/auth/login`, JSON.stringify({ nickName, password }), { headers: JSON_HEADERS });
  if (res.status !== 200) fail(`login ${nickName}: ${res.status} ${res.body}`);
  return res.json('accessToken');
}

export function adminToken() {
  return login(__ENV.ADMIN_NICK || 'admin', __ENV.ADMIN_PASSWORD || fail('ADMIN_PASSWORD is required'));
}

// A concert with `rows` × `perRow` seats; returns its id and seat ids in natural order.
export function createConcert(admin, title, rows, perRow, extra = {}) {
  const body = { title, venue: 'k6 Hall', concertDate: '2099-06-01T19:00:00Z', rows, seatsPerRow: perRow, ...extra };
  const res = http.post(`${BASE}/api/concerts`, JSON.stringify(body), auth(admin));
  if (res.status !== 201) fail(`create concert: ${res.status} ${res.body}`);
  const id = res.json('id');
  const seats = http.get(`${BASE}/api/concerts/${id}/seats`).json().map((s) => s.id);
  return { id, seats };
}

// `n` users signed up and logged in (in parallel batches); returns their tokens.
export function createUsers(n, prefix) {
  const password = 'k6-password-123';
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const tokens = [];
  for (let i = 0; i < names.length; i += 50) {
    const chunk = names.slice(i, i + 50);
    const signups = http.batch(chunk.map((nickName) => ['POST', `${BASE}/api/users`, JSON.stringify({ nickName, password }), { headers: JSON_HEADERS }]));
    signups.forEach((r, j) => { if (r.status !== 201) fail(`sign up ${chunk[j]}: ${r.status} ${r.body}`); });
    const logins = http.batch(chunk.map((nickName) => ['POST', `${BASE}/api/auth/login`, JSON.stringify({ nickName, password }), { headers: JSON_HEADERS }]));
    logins.forEach((r, j) => { if (r.status !== 200) fail(`log in ${chunk[j]}: ${r.status}`); tokens.push(r.json('accessToken')); });
  }
  return tokens;
}

// The server's timestamps (RFC 3339 with microseconds) as epoch milliseconds.
function epochMs(text) {
  return text ? Date.parse(text.replace(/(\.\d{3})\d*/, '$1')) : undefined;
}

// The outcome a status answer reports, or null while the request is open.
function decisionOf(s, started) {
  const status = s.status === 200 ? s.json('status') : undefined;
  if (status !== 'SUCCESS' && status !== 'FAILED') return null;
  return {
    status,
    reservationId: s.json('reservationId'),
    ms: Date.now() - started,
    requestedAt: epochMs(s.json('requestedAt')),
    decidedAt: epochMs(s.json('decidedAt')),
  };
}

// Requests the seat and polls its status, as a client would, until it is
// decided; returns { status, reservationId, ms, requestedAt, decidedAt } (the
// last two by the server's clock) or null when refused at once.
export function reserveAndWait(token, seatId, { timeoutMs = 30000, pollMs = 50 } = {}) {
  const started = Date.now();
  const res = http.post(`${BASE}/api/reservations`, JSON.stringify({ seatId }), auth(token));
  if (!check(res, { 'reservation accepted (201)': (r) => r.status === 201 })) return null;
  const queueId = res.json('queueId');
  while (Date.now() - started < timeoutMs) {
    sleep(pollMs / 1000);
    const decided = decisionOf(http.get(`${BASE}/api/reservations/status/${queueId}`, { ...auth(token), tags: { name: 'status' } }), started);
    if (decided) return decided;
  }
  return { status: 'TIMEOUT', ms: Date.now() - started };
}

// reserveAndWait for many users at once in one VU: requests and polls go out
// concurrently (k6's event loop), so a few hundred VUs carry thousands of
// waiting users.
// With `hinted`, each poll waits for the `pollAfterMs` of the previous
// answer (the first waits `pollMs`) instead of `pollMs` every time.
// `buyerRequests` (a Counter) counts the HTTP requests this buyer made.
export async function reserveAndWaitAsync(token, seatId, { timeoutMs = 30000, pollMs = 50, hinted = false, expect = null, buyerRequests = null } = {}) {
  const started = Date.now();
  const res = await http.asyncRequest('POST', `${BASE}/api/reservations`, JSON.stringify({ seatId }), auth(token));
  if (buyerRequests) buyerRequests.add(1);
  if (!check(res, { 'reservation accepted (201)': (r) => r.status === 201 })) return null;
  if (expect) check(res, { [`accepted as ${expect}`]: (r) => r.json('status') === expect });
  const queueId = res.json('queueId');
  let wait = pollMs;
  while (Date.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    const answer = await http.asyncRequest('GET', `${BASE}/api/reservations/status/${queueId}`, null, { ...auth(token), tags: { name: 'status' } });
    if (buyerRequests) buyerRequests.add(1);
    const decided = decisionOf(answer, started);
    if (decided) return decided;
    if (hinted && answer.status === 200 && answer.json('pollAfterMs')) wait = answer.json('pollAfterMs');
  }
  return { status: 'TIMEOUT', ms: Date.now() - started };
}

const success = new Counter('reservation_success');
const failed = new Counter('reservation_failed');
const decision = new Trend('decision_ms', true);
const serverDecision = new Trend('decision_server_ms', true);

// Counts a request's outcome: SUCCESS / FAILED totals and time to decision.
export function record(outcome) {
  if (!outcome) return;
  check(outcome, { 'decided in time': (o) => o.status !== 'TIMEOUT' });
  decision.add(outcome.ms);
  if (outcome.decidedAt !== undefined) serverDecision.add(outcome.decidedAt - outcome.requestedAt);
  if (outcome.status === 'SUCCESS') success.add(1);
  if (outcome.status === 'FAILED') failed.add(1);
}

export function concert(id) {
  return http.get(`${BASE}/api/concerts/${id}`).json();
}

// CONFIRMED reservations across the given users (each can see only their own).
export function confirmedCount(tokens) {
  let n = 0;
  for (const token of tokens) {
    const mine = http.get(`${BASE}/api/users/me/reservations?size=100`, auth(token)).json();
    n += mine.filter((r) => r.status === 'CONFIRMED').length;
  }
  return n;
}

// Every reservation of the given users (each sees only their own), 50
// users a batch.
export function reservationsOf(tokens) {
  const all = [];
  for (let i = 0; i < tokens.length; i += 50) {
    const pages = http.batch(tokens.slice(i, i + 50).map((t) => ['GET', `${BASE}/api/users/me/reservations?size=100`, null, auth(t)]));
    pages.forEach((p) => all.push(...p.json()));
  }
  return all;
}

// Checks that every seat of the concert ends sold to exactly one of the
// CONFIRMED reservations given (`ours`, the concert's) or available; returns
// the sold seats (seat id → reservation id) and the concert's seats.
export function checkSoldOnce(concertId, ours) {
  const sold = new Map();
  let soldTwice = 0;
  for (const r of ours.filter((x) => x.status === 'CONFIRMED')) {
    for (const s of r.seats) {
      if (sold.has(s.seatId)) soldTwice += 1;
      sold.set(s.seatId, r.reservationId);
    }
  }
  const seats = http.get(`${BASE}/api/concerts/${concertId}/seats`).json();
  const wrong = seats.filter((s) => (sold.has(s.id) ? s.status !== 'RESERVED' : s.status !== 'AVAILABLE'));
  check(soldTwice, { 'no seat sold to two confirmed reservations': (n) => n === 0 });
  check(wrong, { 'every seat is sold to its one confirmed reservation or available': (w) => w.length === 0 });
  return { sold, seats };
}

// A JSON summary next to k6's own, for CI artifacts; `extra(data)` adds
// scenario-specific figures to the printed one.
export function summary(name, extra = () => ({})) {
  return (data) => {
    const dir = __ENV.TICKET_SUMMARY_DIR || '.';
    const m = data.metrics;
    const pick = (k) => (m[k] ? m[k].values : undefined);
    const short = {
      scenario: name,
      checks: pick('checks'),
      http_reqs: pick('http_reqs'),
      http_req_duration: pick('http_req_duration'),
      decision_ms: pick('decision_ms'),
      decision_server_ms: pick('decision_server_ms'),
      reservation_success: pick('reservation_success'),
      reservation_failed: pick('reservation_failed'),
      thresholds_failed: Object.entries(m).filter(([, v]) => v.thresholds && Object.values(v.thresholds).some((t) => !t.ok)).map(([k]) => k),
      ...extra(data),
    };
    return {
      [`${dir}/${name}-summary.json`]: JSON.stringify(data, null, 2),
      stdout: `${JSON.stringify(short, null, 2)}\n`,
    };
  };
}
