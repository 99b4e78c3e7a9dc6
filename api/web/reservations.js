// One's own reservations: seats, state, a hold's time left, pay or
// confirm, cancel (a paid order's cancel is its refund, while the concert
// allows one), and the money: paid, refunded, a cancelled show.

import { api, currentUser } from "./api.js";
import { clock, countdown, fill, h, placesOf, quiet, table, tell } from "./dom.js";
import { money } from "./money.js";
import { PayPanel, paidOnline, refundWords, amountDue } from "./payment.js";
import { t, tNodes } from "./i18n.js";

export async function reservationsView(main, { signal }) {
  if (!currentUser()) {
    location.hash = "#/login?next=%23%2Fme%2Freservations";
    return;
  }
  const list = await api("GET", "/api/users/me/reservations?page=0&size=100", undefined, { signal });
  const concerts = new Map();
  await Promise.all(
    [...new Set(list.map((r) => r.concertId))].map(async (id) => {
      try {
        concerts.set(id, await api("GET", `/api/concerts/${id}`, undefined, { signal }));
      } catch {
        concerts.set(id, { title: t("reservations.concert", { id: String(id) }) });
      }
    }),
  );
  // The money of priced orders: what was paid, what came back.
  const paidFor = new Map();
  await Promise.all(
    list
      .filter((r) => amountDue(r) > 0 && r.status !== "HELD")
      .map(async (r) => {
        paidFor.set(r.reservationId, await api("GET", `/api/reservations/${r.reservationId}/payments`, undefined, { signal }).catch(() => null));
      }),
  );
  const rows = await Promise.all(list.map(async (r) => {
    const concert = concerts.get(r.concertId);
    const actions = h("td", { class: "actions" });
    const state = h("td", {}, h("span", { class: `status ${r.status.toLowerCase()}` }, t(STATUSES[r.status] || "reservations.other")));
    const paid = paidFor.get(r.reservationId);
    // Money words only where money moved, and how: by card, or at the
    // box office's desk (cash, a transfer), given back the same way.
    const taken = paid?.payments.find((p) => p.status === "SUCCEEDED");
    const providerPaid = Boolean(taken);
    const atDesk = taken?.provider === "manual";
    if (taken) state.append(h("p", { class: "paid" }, t(atDesk ? "reservations.paidAtDesk" : "reservations.paid", { amount: money(amountDue(r), r.currency) })));
    const byHand = new Set((paid?.payments || []).filter((p) => p.provider === "manual").map((p) => p.paymentId));
    for (const refund of paid?.refunds || []) {
      // A refund of some of the order's seats says which.
      const given = r.seats.filter((s) => refund.seatIds?.includes(s.seatId));
      const back = refundWords(refund, { byHand: byHand.has(refund.paymentId) });
      const words = given.length && given.length < r.seats.length ? t("pay.refundedSeats", { refund: back, seats: placesOf(given) }) : back;
      state.append(h("p", { class: "refund" }, REASONS[refund.reason] ? t("reservations.refundBecause", { refund: words, reason: t(REASONS[refund.reason]) }) : t("reservations.refund", { refund: words })));
    }
    if (concert.cancelledAt) state.append(h("p", { class: "cancelled-show" }, t("concert.cancelledPlain")));
    let panel = null;
    if (r.status === "HELD") {
      const left = h("span", { class: "countdown" });
      state.append(" ", left);
      countdown(left, r.holdExpiresAt, (ms) => t("reservations.left", { time: clock(ms) }), () => {
        if (!panel?.busy) reservationsView(main, { signal });
      });
      panel = (await paidOnline(r)) ? payButton(r, actions) : null;
      // Priced without payments online: paid and confirmed at the desk.
      if (!panel && amountDue(r) > 0) state.append(h("p", { class: "pay-at-desk" }, t("concert.payAtDesk")));
      else if (!panel) actions.append(act(t("concert.confirm"), () => api("POST", `/api/reservations/${r.reservationId}/confirm`, {})));
    }
    // A ticket used at the door is not given back; anything else is
    // cancelled only once the fan has said so twice. A paid order is
    // given back (refunded) only while its concert allows it.
    const refundable = !providerPaid || (concert.refundableUntil && new Date(concert.refundableUntil) > Date.now());
    if ((r.status === "HELD" || (r.status === "CONFIRMED" && refundable && !concert.cancelledAt)) && !r.checkedIn) {
      actions.append(cancel(r, providerPaid, atDesk));
    }
    if (r.checkedIn) actions.append(h("span", { class: "muted" }, t("reservations.usedAtDoor")));
    return h(
      "tr",
      { "data-reservation": r.reservationId },
      h("td", {}, h("a", { href: `#/concerts/${r.concertId}` }, concert.title), h("span", { class: "muted order" }, t("reservations.order", { id: String(r.reservationId) }))),
      h("td", {}, placesOf(r.seats)),
      state,
      actions,
    );
  }));
  /** "Pay €178.00": the card form opens in place of the button. */
  function payButton(r, actions) {
    const panel = new PayPanel(r, { signal, onSettled: () => reservationsView(main, { signal }) });
    panel.element.hidden = true;
    const open = h("button", { type: "button", class: "primary" }, t("pay.pay", { amount: money(amountDue(r), r.currency) }));
    open.addEventListener("click", () => {
      open.hidden = true;
      panel.element.hidden = false;
      panel.button.focus();
    });
    actions.append(open, panel.element);
    return panel;
  }
  function cancel(r, providerPaid, atDesk) {
    const seats = placesOf(r.seats);
    const ask = h("button", { type: "button", class: "cancel" }, t(providerPaid ? "reservations.cancelAndRefund" : "reservations.cancel"));
    const question = h(
      "span",
      { class: "confirm-cancel", hidden: true },
      providerPaid ? t(atDesk ? "reservations.reallyCancelPaidAtDesk" : "reservations.reallyCancelPaid", { seats, amount: money(amountDue(r), r.currency) }) : t("reservations.reallyCancel", { seats }),
      " ",
    );
    const keep = h("button", { type: "button" }, t("reservations.keep"));
    question.append(act(t("reservations.yesCancel"), () => api("POST", `/api/reservations/${r.reservationId}/cancel`, {})), " ", keep);
    ask.addEventListener("click", () => {
      ask.hidden = true;
      question.hidden = false;
      keep.focus();
    });
    keep.addEventListener("click", () => {
      question.hidden = true;
      ask.hidden = false;
      ask.focus();
    });
    return h("span", {}, ask, question);
  }
  function act(label, call) {
    return h("button", {
      type: "button",
      onclick: async (event) => {
        event.target.disabled = true;
        try {
          await call();
          quiet();
          await reservationsView(main, { signal });
        } catch (e) {
          tell(e.message);
          event.target.disabled = false;
        }
      },
    }, label);
  }
  fill(
    main,
    h("h1", {}, t("title.reservations")),
    rows.length
      ? table(["reservations.concertColumn", "reservations.seatsColumn", "reservations.stateColumn", "reservations.actionsColumn"], rows)
      : h("p", { class: "muted" }, tNodes("reservations.none", { find: h("a", { href: "#/" }, t("reservations.findConcert")) })),
  );
}

/** Why money came back, in words. */
const REASONS = {
  LATE_PAYMENT: "reservations.latePayment",
  EXTRA_PAYMENT: "reservations.paidTwice",
  REQUESTED: "reservations.cancelled",
  CONCERT_CANCELLED: "reservations.concertCancelled",
  VOIDED: "reservations.voided",
};

/** A reservation's state in words. */
const STATUSES = {
  HELD: "reservations.held",
  CONFIRMED: "reservations.confirmed",
  CANCELLED: "reservations.cancelled",
  EXPIRED: "reservations.expired",
};
