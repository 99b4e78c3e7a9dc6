// A sold-out concert's waiting list on its page: join it for a number of
// seats, see your place, leave it; when seats come back and it is your
// turn, they are held for you (the page shows the hold and its countdown
// like any other, through `onOffer`).

import { Problem, api, currentUser } from "./api.js";
import { fill, h, tell } from "./dom.js";

/** How often a fan on the list looks for their place and an offer. */
const POLL_MS = 3000;

export class WaitingList {
  constructor(concert, { signal, onOffer, accessCode, proof }) {
    this.concert = concert;
    this.signal = signal;
    this.onOffer = onOffer;
    this.accessCode = accessCode;
    this.proof = proof;
    this.element = h("section", { class: "waiting-list", "aria-live": "polite", "aria-label": "Waiting list", hidden: true });
    this.soldOut = false;
    this.entry = null;
    this.shownOffer = null;
    this.timer = null;
    signal.addEventListener("abort", () => clearTimeout(this.timer));
  }

  /** The seat counts changed: a sold-out concert offers its list. */
  counts(available) {
    // A cancelled concert has no list to wait on.
    const soldOut = available === 0 && !this.concert.cancelledAt;
    if (soldOut === this.soldOut) return;
    this.soldOut = soldOut;
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
      const leave = h("button", { type: "button" }, "Leave the waiting list");
      leave.addEventListener("click", () => this.leave(leave));
      const seats = entry.seats === 1 ? "1 seat" : `${entry.seats} seats`;
      fill(
        this.element,
        h("h2", {}, "On the waiting list"),
        h("p", { class: "waiting-position" }, `You are number ${entry.position} for ${seats}. When seats come back, they are held for you in turn.`),
        h("p", { class: "actions" }, leave),
      );
      this.element.hidden = false;
      return;
    }
    if (!this.soldOut) {
      this.element.hidden = true;
      return;
    }
    const count = h("select", { name: "waitingSeats", "aria-label": "Seats wanted" });
    for (let n = 1; n <= this.concert.maxSeatsPerOrder; n++) count.append(h("option", { value: n }, n === 1 ? "1 seat" : `${n} seats`));
    const join = h("button", { type: "button", class: "primary" }, "Join the waiting list");
    join.addEventListener("click", () => this.join(join, Number(count.value)));
    fill(
      this.element,
      h("h2", {}, "Sold out"),
      h("p", {}, "Join the waiting list: seats that come back go to the fans on it in the order they joined, held for you to confirm."),
      h("p", { class: "actions" }, count, join),
    );
    this.element.hidden = false;
  }

  async join(button, seats) {
    if (!currentUser()) {
      location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
      return;
    }
    button.disabled = true;
    try {
      const body = { seats };
      const code = this.accessCode?.();
      if (code) body.accessCode = code;
      const headers = this.proof ? { "Proof-Of-Work": await this.proof.solve(this.signal) } : {};
      this.entry = await api("POST", `/api/concerts/${this.concert.id}/waiting-list`, body, { headers });
      this.refresh();
    } catch (e) {
      if (e.name === "AbortError") return;
      button.disabled = false;
      tell(e instanceof Problem ? (REFUSALS[e.code] || e.message) : e.message);
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
  SEATS_AVAILABLE: "Seats are free again: pick one on the map and reserve it.",
  ALREADY_ON_WAITING_LIST: "You are on the waiting list already (or seats from it are held for you).",
  ACCESS_CODE_REQUIRED: "The presale is on: enter your access code above to join the waiting list.",
  SALE_NOT_OPEN: "The sale has not opened yet: the waiting list opens with it.",
};
