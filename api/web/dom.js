// Small helpers for building the page without innerHTML: every text goes
// in as text, so nothing a user typed can become markup.

import { locale, t } from "./i18n.js";

/** An element: h("button", {type: "button", onclick}, "Reserve"). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's content. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

let fieldCount = 0;

/** A labelled form field; its error (if any) is tied to it for screen readers. */
export function field(label, input, error) {
  // Named by the input's name: labels are in the reader's language.
  const id = input.id || `f-${input.name || (fieldCount += 1)}`;
  input.id = id;
  const parts = [h("label", { for: id }, label), input];
  if (error) {
    const errorId = `${id}-error`;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", errorId);
    parts.push(h("p", { class: "field-error", id: errorId }, error));
  }
  return h("div", { class: "field" }, ...parts);
}

const notice = () => document.getElementById("notice");

/**
 * Shows a message everyone notices (an alert for screen readers);
 * `acrossNavigation`: it stays through the page change that follows.
 */
export function tell(message, kind = "error", { acrossNavigation = false } = {}) {
  const box = notice();
  box.className = `notice ${kind}`;
  box.dataset.keep = acrossNavigation ? "once" : "";
  fill(box, message);
  box.hidden = false;
}

export function quiet() {
  notice().hidden = true;
}

/** A new page: the last message goes, unless it was told to stay. */
export function navigated() {
  const box = notice();
  if (box.dataset.keep) box.dataset.keep = "";
  else box.hidden = true;
}

/** "1:05:09", "4:59", "0:07". */
export function clock(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

/** "about 3 seconds", "about 2 minutes". */
export function roughly(ms) {
  if (ms < 1500) return t("time.underTwoSeconds");
  if (ms < 90_000) return t("time.aboutSeconds", { count: Math.round(ms / 1000) });
  return t("time.aboutMinutes", { count: Math.round(ms / 60_000) });
}

/**
 * A concert's time `field` in the venue's time, with its zone's name
 * ("Sat, 9 Sep 2030, 18:00 KST"), whatever the viewer's zone.
 */
export function when(concert, field) {
  const at = dateTime(concert[field], concert.timeZone);
  const zone = concert.timeZoneNames?.[field];
  return zone ? `${at} ${zone}` : at;
}

/** `iso` as a date and time in `zone` ("Sat, 9 Sep 2030, 18:00"). */
export function dateTime(iso, zone) {
  return new Date(iso).toLocaleString(locale(), {
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZone: zone || "UTC",
  });
}

/**
 * A ticking countdown in `element` until `at`; stops itself when detached.
 * A timer to screen readers: read when asked, not announced every tick.
 */
export function countdown(element, at, render, onEnd) {
  element.setAttribute("role", "timer");
  const tick = () => {
    if (!element.isConnected) return clearInterval(timer);
    const left = new Date(at).getTime() - Date.now();
    fill(element, render(left));
    if (left <= 0) {
      clearInterval(timer);
      if (onEnd) onEnd();
    }
  };
  const timer = setInterval(tick, 250);
  tick();
  return () => clearInterval(timer);
}

/** The wall time `ms` shows in `zone`, as if it were UTC (ms). */
function wallTime(ms, zone) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
}

/**
 * The value of an <input type="datetime-local">, a wall time in `zone`
 * (the venue's), as RFC 3339: the instant that shows that time there.
 */
export function fromZonedInput(value, zone) {
  if (!value) return null;
  const [date, time] = value.split("T");
  const [y, mo, d] = date.split("-").map(Number);
  const [hh, mm] = time.split(":").map(Number);
  const wall = Date.UTC(y, mo - 1, d, hh, mm);
  // The zone's offset at the guess, then at the answer (a DST change
  // between them moves it).
  let at = wall - (wallTime(wall, zone) - wall);
  at = wall - (wallTime(at, zone) - at);
  return new Date(at).toISOString();
}

/** `iso` as an <input type="datetime-local"> value in `zone`'s wall time. */
export function toZonedInput(iso, zone) {
  if (!iso) return "";
  return new Date(wallTime(new Date(iso).getTime(), zone)).toISOString().slice(0, 16);
}

/** The hour and minute `iso` shows in `zone` ("19:02"). */
export function clockAt(iso, zone) {
  return new Date(iso).toLocaleTimeString(locale(), { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone: zone || "UTC" });
}

/** The viewer's own time zone. */
export function ownTimeZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

let kept = null;

/**
 * What a view shows only once (a door's pairing code, new access codes):
 * kept while the view is drawn anew in place (a language switch repaints
 * it) and forgotten once the operator leaves it. `get()` is what the
 * view showed last, `set(value)` keeps it.
 */
export function shownOnce(signal) {
  const here = location.hash;
  if (kept?.here !== here) kept = null;
  signal.addEventListener("abort", () => {
    if (location.hash !== here) kept = null;
  });
  return {
    get: () => kept?.value,
    set: (value) => {
      kept = { here, value };
    },
  };
}

/**
 * A table: its head's words (catalogue keys) and its rows. On a phone each
 * row is a card, each cell under its column's name (`data-label`).
 */
export function table(head, rows) {
  const names = head.map((k) => t(k));
  for (const row of rows) {
    [...row.children].forEach((cell, i) => {
      if (names[i] && !cell.dataset.label) cell.dataset.label = names[i];
    });
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "table" }, h("thead", {}, h("tr", {}, names.map((name) => h("th", { scope: "col" }, name)))), h("tbody", {}, rows)));
}

/**
 * A seat as the venue names it (`seat.place`): "Stalls, row 3, seat 9",
 * "Floor, entry no. 12"; a grid's seat by its number ("A1"), as its
 * venue writes it.
 */
export function placeName(seat) {
  const p = seat.place || {};
  if (p.area) return t("place.standing", { area: p.area, entry: String(p.entryNumber) });
  if (!p.row || !p.seat || `${p.row}${p.seat}` === seat.seatNumber) return seat.seatNumber;
  return p.zone ? t("place.zoneRowSeat", { zone: p.zone, row: p.row, seat: p.seat }) : t("place.rowSeat", { row: p.row, seat: p.seat });
}

/** Seats as the venue names them, in a list. */
export function placesOf(seats) {
  // Places of one area: the area once, then their entry numbers.
  const area = seats[0]?.place?.area;
  if (seats.length > 1 && area && seats.every((s) => s.place?.area === area)) {
    return t("place.standingMany", { area, entries: seats.map((s) => s.place.entryNumber).join(", ") });
  }
  return listOf(seats.map(placeName));
}

/** Names in a list ("; " between names that hold a comma). */
export function listOf(names) {
  return names.join(names.some((name) => name.includes(",")) ? "; " : ", ");
}
