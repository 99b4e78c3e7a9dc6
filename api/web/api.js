// The public API, as the page uses it: JSON in and out, the signed-in
// user's bearer token on every call, problems turned into errors people
// can read: the catalogue's sentence for the problem's `code` and for each
// field, never the API's own English or its field names.

import { has, language, t } from "./i18n.js";

const COOKIE = "ticket_session";

const session = { token: null, user: null, organizers: [], invitations: [], listeners: new Set() };

export class Problem extends Error {
  constructor(status, body) {
    const code = body?.code || "UNKNOWN";
    super(has(`problem.${code}`) ? t(`problem.${code}`) : t("problem.unknown", { status }));
    this.status = status;
    this.code = code;
    this.body = body || {};
  }

  /** Field messages in words, by field name, for forms. */
  fields() {
    const out = {};
    for (const e of this.body.errors || []) out[e.field] = has(`invalid.${e.field}`) ? t(`invalid.${e.field}`) : t("invalid.other");
    return out;
  }
}

export function currentUser() {
  return session.user;
}

export function isAdmin() {
  return session.user?.role === "ADMIN";
}

/** The organizers the caller works for, each with the permissions their role gives there. */
export function myOrganizers() {
  return session.organizers;
}

/** Invitations to a team waiting for the caller's answer. */
export function myInvitations() {
  return session.invitations;
}

/**
 * Whether the caller's role lets them do `permission` on `concert` (a
 * concert answer, with its organizerId): the server's word, read with the
 * caller's organizers; the server checks again on every call.
 */
export function can(concert, permission) {
  if (isAdmin()) return true;
  const organizer = session.organizers.find((o) => o.id === concert?.organizerId);
  if (!organizer || !organizer.permissions.includes(permission)) return false;
  return organizer.concertIds === null || organizer.concertIds.includes(concert.id);
}

/** Whether the caller may do `permission` at any organizer (what the menu offers). */
export function canSomewhere(permission) {
  return isAdmin() || session.organizers.some((o) => o.permissions.includes(permission));
}

const WORKING_FOR = "ticket.organizer";

/**
 * The organizer the caller works for now (the switcher's choice, kept in
 * this browser), if it gives `permission`; else the first that does; null
 * for the platform's admin who chose none (the server takes its first).
 */
export function workingOrganizer(permission) {
  const chosen = Number(localStorage.getItem(WORKING_FOR));
  const gives = (o) => !permission || o.permissions.includes(permission);
  return session.organizers.find((o) => o.id === chosen && gives(o)) || session.organizers.find((o) => o.role && gives(o)) || null;
}

/** Remembers the organizer the caller works for now. */
export function workFor(id) {
  localStorage.setItem(WORKING_FOR, String(id));
}

/** Reads again the caller's organizers and invitations (after joining a team). */
export async function refreshTeams() {
  if (!session.token) {
    session.organizers = [];
    session.invitations = [];
    return;
  }
  const [organizers, invitations] = await Promise.all([api("GET", "/api/organizers"), api("GET", "/api/users/me/invitations")]);
  session.organizers = organizers;
  session.invitations = invitations;
}

export function onSessionChange(listener) {
  session.listeners.add(listener);
}

function changed() {
  for (const listener of session.listeners) listener(session.user);
}

// The token lives in memory and in a SameSite=Strict cookie (so that a
// reload keeps you signed in; never in a URL). The API reads only the
// Authorization header, so the cookie is never an ambient credential.
function keepToken(token, seconds) {
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `${COOKIE}=${token}; Max-Age=${seconds}; Path=/; SameSite=Strict${secure}`;
}

function storedToken() {
  const entry = document.cookie.split("; ").find((c) => c.startsWith(`${COOKIE}=`));
  return entry ? entry.slice(COOKIE.length + 1) : null;
}

function forgetToken() {
  document.cookie = `${COOKIE}=; Max-Age=0; Path=/; SameSite=Strict`;
}

export async function api(method, path, body, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
      cache: "no-store",
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new Problem(0, { code: "NETWORK" });
  }
  if (options.raw) return response;
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    // A token refused ends the session; a password refused (the current
    // one, asked again to change the account) does not.
    if (response.status === 401 && session.token && data?.code !== "INVALID_CREDENTIALS") signedOut();
    throw new Problem(response.status, data);
  }
  return data;
}

export function bearer() {
  return session.token;
}

/** Fetches `path` as CSV with the caller's token and saves it as `name`. */
export async function downloadCsv(path, name) {
  const response = await api("GET", path, undefined, { headers: { Accept: "text/csv" }, raw: true });
  if (!response.ok) throw new Problem(response.status, await response.json().catch(() => null));
  const url = URL.createObjectURL(new Blob([await response.text()], { type: "text/csv" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export async function logIn(nickName, password) {
  const login = await api("POST", "/api/auth/login", { nickName, password });
  session.token = login.accessToken;
  try {
    session.user = await api("GET", "/api/users/me");
    await refreshTeams();
  } catch (e) {
    session.token = null;
    throw e;
  }
  keepToken(login.accessToken, login.expiresIn);
  changed();
  return session.user;
}

export async function signUp(nickName, password, email) {
  await api("POST", "/api/users", { nickName, password, ...(email ? { email } : {}), language: language() });
  return logIn(nickName, password);
}

/** Keeps the page's language on the account (mail is written in it). */
export async function saveLanguage(code) {
  if (!session.user) return;
  session.user = await api("PATCH", `/api/users/${session.user.id}`, { language: code });
}

/** Ends the session in this browser (the token is forgotten). */
export function logOut() {
  signedOut();
}

function signedOut() {
  session.token = null;
  session.user = null;
  session.organizers = [];
  session.invitations = [];
  forgetToken();
  changed();
}

/** Picks up the session a reload left in the cookie, if still valid. */
export async function resume() {
  const token = storedToken();
  if (!token) return null;
  session.token = token;
  try {
    session.user = await api("GET", "/api/users/me");
    await refreshTeams();
  } catch {
    session.token = null;
    session.user = null;
    forgetToken();
  }
  changed();
  return session.user;
}
