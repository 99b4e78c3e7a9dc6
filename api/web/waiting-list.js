// A sold-out concert's waiting list on its page: join it for a number of
// seats (any seat, or of a sold-out price category or standing area), see
// your place, leave it; when seats come back and it is your turn, they are
// held for you (the page shows the hold and its countdown like any other,
// through `onOffer`).

import { Problem, api, currentUser } from "./api.js";
import { fill, h, tell } from "./dom.js";
import { t } from "./i18n.js";

/** How often a fan on the list looks for their place and an offer. */
const POLL_MS = 3000;

export class WaitingList {
  constructor(concert, { signal, onOffer, accessCode, proof, refuse }) {
    // Where a refused join is said (beside its button), else the notice.
    this.refuse = refuse || ((message) => tell(message));
    this.concert = concert;
    this.signal = signal;
    this.onOffer = onOffer;
    this.accessCode = accessCode;
    this.proof = proof;
    this.element = h("section", { class: "waiting-list", "aria-live": "polite", "aria-label": t("waiting.label"), hidden: true });
    // What may be waited for now: [{label, body}] (the join's fields).
    this.choices = [];
    this.entry = null;
    this.shownOffer = null;
    this.timer = null;
    signal.addEventListener("abort", () => clearTimeout(this.timer));
  }

  /**
   * The counts changed: what is sold out may be waited for. Any seat once
   * no seat is free; a price category (of several) once its seats are
   * gone; a standing area once its places are.
   */
  counts({ available, byCategory = [], byArea = [] }) {
    const choices = [];
    // A cancelled concert has no list to wait on.
    if (!this.concert.cancelledAt) {
      const areas = this.concert.areas || [];
      const places = areas.reduce((n, a) => n + a.capacity, 0);
      const placesFree = byArea.reduce((n, free) => n + free, 0);
      if (this.concert.seatCount > places && available - placesFree === 0) choices.push({ label: t("waiting.anySeat"), body: {} });
      const categories = this.concert.categories || [];
      if (categories.length > 1) {
        categories.forEach((c, i) => {
          // A category without seats of its own is nothing to wait for.
          if (byCategory[i] === 0) choices.push({ label: c.name, body: { category: c.name } });
        });
      }
      areas.forEach((a, i) => {
        if (byArea[i] === 0) choices.push({ label: t("waiting.standing", { area: a.name }), body: { area: a.name } });
      });
    }
    if (JSON.stringify(choices) === JSON.stringify(this.choices)) return;
    this.choices = choices;
    this.refresh();
  }

  async refresh() {
    clearTimeout(this.timer);
    if (this.signal.aborted) return;
    if (currentUser()) {
      try {
        this.entry = await api("GET", `/api/concerts/${this.concert.id}/waiting-list/me`, undefined, { signal: this.signal });
      } catch (e) {
        if (e.name === "AbortError") return;
        this.entry = null;
      }
    }
    this.render();
    if (this.entry?.status === "WAITING") this.timer = setTimeout(() => this.refresh(), POLL_MS);
  }

  render() {
    const entry = this.entry;
    const offer = entry?.offer;
    if (offer && offer.status === "HELD") {
      this.element.hidden = true;
      if (this.shownOffer !== offer.reservationId) {
        this.shownOffer = offer.reservationId;
        this.onOffer(offer);
      }
      return;
    }
    if (entry?.status === "WAITING") {
      const leave = h("button", { type: "button" }, t("waiting.leave"));
      leave.addEventListener("click", () => this.leave(leave));
      const seats = t("concert.seats", { count: entry.seats });
      const number = entry.area ? "waiting.numberOnArea" : entry.category ? "waiting.numberInCategory" : "waiting.number";
      fill(
        this.element,
        h("h2", {}, t("waiting.heading")),
        h("p", { class: "waiting-position" }, t(number, { position: entry.position, seats, area: entry.area, category: entry.category })),
        h("p", { class: "actions" }, leave),
      );
      this.element.hidden = false;
      return;
    }
    const choices = this.choices;
    if (choices.length === 0) {
      this.element.hidden = true;
      return;
    }
    const count = h("select", { name: "waitingSeats", "aria-label": t("waiting.seatsWanted") });
    for (let n = 1; n <= this.concert.maxSeatsPerOrder; n++) count.append(h("option", { value: n }, t("concert.seats", { count: n })));
    // One thing to wait for needs no choice; several get a list.
    const what = h("select", { name: "waitingFor", "aria-label": t("waiting.waitFor"), hidden: choices.length === 1 });
    choices.forEach((c, i) => what.append(h("option", { value: i }, c.label)));
    const join = h("button", { type: "button", class: "primary" }, t("waiting.join"));
    join.addEventListener("click", () => this.join(join, { seats: Number(count.value), ...choices[Number(what.value)].body }));
    // Every seat gone is "Sold out"; else what is.
    const everySeat = choices.some((c) => !c.body.category && !c.body.area);
    fill(
      this.element,
      h("h2", {}, everySeat ? t("concerts.soldOut") : t("waiting.soldOutOf", { what: choices.map((c) => c.label).join(", ") })),
      h("p", {}, t("waiting.explained")),
      h("p", { class: "actions" }, count, what, join),
    );
    this.element.hidden = false;
  }

  async join(button, fields) {
    if (!currentUser()) {
      location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
      return;
    }
    button.disabled = true;
    try {
      const body = { ...fields };
      const code = this.accessCode?.();
      if (code) body.accessCode = code;
      const headers = this.proof ? { "Proof-Of-Work": await this.proof.solve(this.signal) } : {};
      this.entry = await api("POST", `/api/concerts/${this.concert.id}/waiting-list`, body, { headers });
      this.refresh();
    } catch (e) {
      if (e.name === "AbortError") return;
      button.disabled = false;
      this.refuse(e instanceof Problem && REFUSALS[e.code] ? t(REFUSALS[e.code]) : e.message, button);
    }
  }

  async leave(button) {
    button.disabled = true;
    try {
      await api("DELETE", `/api/concerts/${this.concert.id}/waiting-list`);
      this.entry = null;
      this.render();
    } catch (e) {
      button.disabled = false;
      tell(e.message);
    }
  }
}

const REFUSALS = {
  SEATS_AVAILABLE: "waiting.seatsAvailable",
  ALREADY_ON_WAITING_LIST: "waiting.already",
  ACCESS_CODE_REQUIRED: "waiting.codeRequired",
  SALE_NOT_OPEN: "waiting.notOpen",
};
