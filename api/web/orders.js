// The operator's money on the sale view: the takings (sold, refunded, net,
// live), an order given back in whole or in part (a fan calls with their
// order number, nickname or e-mail; what was paid by hand is given back by
// hand and recorded here), and the whole concert cancelled (typed confirmation),
// with its refunds followed until every order is done.

import { api, downloadCsv } from "./api.js";
import { field, fill, h, placeName, placesOf, tell } from "./dom.js";
import { money } from "./money.js";
import { locale, t } from "./i18n.js";

const TAKINGS_MS = 3000;
const PROGRESS_MS = 1000;

/** Sold, refunded and net, kept fresh while the view is open. */
export function takingsTiles(concertId, signal) {
  const values = {};
  const tile = (key, label) => {
    values[key] = h("dd", { "data-metric": key }, "…");
    return h("div", { class: "tile" }, h("dt", {}, t(label)), values[key]);
  };
  // Four tiles (a row of the sale view's grid): the refunded tickets are
  // counted under their amount.
  const refundedCount = h("dd", { class: "tile-note", "data-metric": "ticketsRefunded" });
  const element = h(
    "section",
    { "aria-labelledby": "takings-heading" },
    h("h2", { id: "takings-heading" }, t("takings.heading")),
    h("dl", { class: "tiles", "aria-live": "off" }, tile("ticketsSold", "takings.ticketsSold"), tile("gross", "takings.gross"), tile("refundedAmount", "takings.refunded"), tile("net", "takings.net")),
    h("p", {}, h("button", { type: "button", class: "export-takings", onclick: () => downloadCsv(`/api/concerts/${concertId}/sales`, `takings-${concertId}.csv`).catch((e) => tell(e.message)) }, t("takings.export"))),
  );
  values.refundedAmount.after(refundedCount);
  const amount = (minor, currency) => (currency ? money(minor, currency) : "–");
  const count = new Intl.NumberFormat(locale());
  const tick = async () => {
    try {
      const sales = await api("GET", `/api/concerts/${concertId}/sales`, undefined, { signal });
      const total = sales.total;
      // Sold is what fans hold now: a ticket given back is no longer sold
      // (it is counted under the refunds).
      fill(values.ticketsSold, count.format(total.sold - total.refunded));
      fill(refundedCount, t("takings.ticketsRefunded", { count: total.refunded }));
      fill(values.gross, amount(total.gross, sales.currency));
      fill(values.refundedAmount, amount(total.refundedAmount, sales.currency));
      fill(values.net, amount(total.net, sales.currency));
    } catch (e) {
      if (e.name === "AbortError") return;
    }
    if (!signal.aborted) setTimeout(tick, TAKINGS_MS);
  };
  tick();
  return element;
}

/** The buyer as the desk knows them: nickname, and address where given. */
function buyerName(buyer) {
  return buyer.email ? t("refund.buyerWithEmail", { name: buyer.nickName, email: buyer.email }) : buyer.nickName;
}

/**
 * Finds an order by its number or its buyer's nickname or e-mail (as a
 * fan on the phone gives them), shows whose it is and its seats, and gives
 * back all or some of its tickets once the operator has confirmed what
 * goes back to whom.
 */
export function refundForm(concertId) {
  const query = h("input", { name: "orderSearch", autocomplete: "off", required: true, maxlength: 254 });
  const found = h("div", { class: "refund-order", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "takings-form", "aria-labelledby": "refund-heading" },
    h("h2", { id: "refund-heading" }, t("refund.heading")),
    field(t("refund.search"), query),
    h("button", { type: "submit" }, t("refund.find")),
    found,
  );
  const show = async (id, buyer) => {
    const [order, paid] = await Promise.all([api("GET", `/api/reservations/${id}`), api("GET", `/api/reservations/${id}/payments`)]);
    const owed = owedByHand(paid, () => show(id, buyer));
    const whose = h("p", { class: "refund-buyer" }, t("refund.whose", { id: String(id), buyer: buyerName(buyer), seats: placesOf(order.seats) }));
    if (order.status !== "CONFIRMED") {
      fill(found, whose, h("p", {}, t("refund.notConfirmed", { id: String(id) })), owed);
      return;
    }
    const tickets = await api("GET", `/api/reservations/${id}/tickets`);
    const prices = new Map(order.seats.map((s) => [s.seatId, s.price]));
    const boxes = tickets.map((ticket) => {
      const price = prices.get(ticket.seatId);
      const parts = [placeName(ticket), ticket.category, price != null && order.currency ? money(price, order.currency) : null].filter(Boolean).join(", ");
      const label = ticket.checkedInAt ? t("refund.usedTicket", { ticket: parts }) : parts;
      return h("li", {}, h("label", {}, h("input", { type: "checkbox", value: ticket.ticketId, disabled: Boolean(ticket.checkedInAt) }), ` ${label}`));
    });
    const some = h("button", { type: "button" }, t("refund.ticked"));
    const all = h("button", { type: "button", class: "danger" }, t("refund.whole"));
    // Nothing goes back before the operator has read what, to whom, and said yes.
    const confirm = h("div", { class: "refund-confirm", role: "alert", hidden: true });
    const refund = async (ticketIds) => {
      some.disabled = all.disabled = true;
      try {
        const result = await api("POST", `/api/reservations/${id}/refund`, ticketIds ? { ticketIds } : {});
        const amount = result.currency ? money(result.amount, result.currency) : t("refund.nothing");
        const done = t(result.status === "PENDING" ? "refund.pending" : "refund.done", { id: String(id), amount });
        tell(`${done} ${t(result.reservationStatus === "CONFIRMED" ? "refund.restValid" : "refund.orderCancelled")}`, "info");
        await show(id, buyer);
      } catch (e) {
        tell(e.message);
        some.disabled = all.disabled = false;
      }
    };
    const ask = (chosen) => {
      const given = chosen ?? tickets.filter((ticket) => !ticket.checkedInAt);
      const minor = given.reduce((sum, ticket) => sum + (prices.get(ticket.seatId) || 0), 0);
      const amount = order.currency ? money(minor, order.currency) : t("refund.nothing");
      const yes = h("button", { type: "button", class: "danger" }, t("refund.yes"));
      const keep = h("button", { type: "button" }, t("refund.keep"));
      yes.addEventListener("click", () => {
        confirm.hidden = true;
        refund(chosen ? chosen.map((ticket) => ticket.ticketId) : null);
      });
      keep.addEventListener("click", () => {
        confirm.hidden = true;
        some.disabled = all.disabled = false;
      });
      some.disabled = all.disabled = true;
      fill(confirm, h("p", {}, t("refund.really", { amount, buyer: buyerName(buyer), seats: placesOf(given) })), h("p", { class: "actions" }, yes, keep));
      confirm.hidden = false;
      keep.focus();
    };
    some.addEventListener("click", () => {
      const ticked = new Set(boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => Number(i.value)));
      if (ticked.size === 0) {
        tell(t("refund.tickFirst"));
        return;
      }
      ask(tickets.filter((ticket) => ticked.has(ticket.ticketId)));
    });
    all.addEventListener("click", () => ask(null));
    fill(
      found,
      whose,
      h("p", {}, t("refund.found", { id: String(id), count: tickets.length, seats: order.seats.length })),
      h("ul", { class: "refund-tickets" }, boxes),
      h("p", { class: "actions" }, some, all),
      confirm,
      owed,
    );
  };
  /** Several orders match: each with whose it is and its seats, to open one. */
  const choose = (orders) => {
    const items = orders.map((order) => {
      const open = h("button", { type: "button" }, t("refund.open"));
      open.addEventListener("click", () => show(order.reservationId, order.buyer).catch((e) => tell(e.message)));
      return h("li", {}, t("refund.whose", { id: String(order.reservationId), buyer: buyerName(order.buyer), seats: placesOf(order.seats) }), " ", open);
    });
    fill(found, h("p", {}, t("refund.several", { count: orders.length })), h("ul", { class: "refund-matches" }, items));
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = query.value.trim();
    if (!text) return;
    try {
      const orders = await api("GET", `/api/concerts/${concertId}/orders?q=${encodeURIComponent(text)}`);
      if (orders.length === 0) fill(found, h("p", {}, t("refund.noMatch", { query: text })));
      else if (orders.length === 1) await show(orders[0].reservationId, orders[0].buyer);
      else choose(orders);
    } catch (e) {
      fill(found);
      tell(e.message);
    }
  });
  return form;
}

/**
 * An order paid by hand is refunded by hand: its refunds wait until the
 * operator records the money given back (with a receipt's or transfer's
 * reference). Nothing when none waits.
 */
function owedByHand(paid, refresh) {
  const byHand = new Set(paid.payments.filter((p) => p.provider === "manual").map((p) => p.paymentId));
  const owed = paid.refunds.filter((r) => r.status === "PENDING" && byHand.has(r.paymentId));
  if (owed.length === 0) return null;
  const item = (refund) => {
    const amount = money(refund.amount, refund.currency);
    const reference = h("input", { name: "paidBackReference", autocomplete: "off", maxlength: 128 });
    const record = h("button", { type: "button" }, t("refund.paidBack"));
    record.addEventListener("click", async () => {
      record.disabled = true;
      const given = reference.value.trim();
      try {
        await api("POST", `/api/refunds/${refund.refundId}/paid-back`, given ? { paymentReference: given } : {});
        tell(t("refund.recordedPaidBack", { refund: String(refund.refundId), amount }), "info");
        await refresh();
      } catch (e) {
        tell(e.message);
        record.disabled = false;
      }
    });
    return h("li", { "data-refund": refund.refundId }, h("p", {}, t("refund.owedByHand", { refund: String(refund.refundId), amount })), field(t("refund.paidBackReference"), reference), record);
  };
  return h("div", { class: "paid-back" }, h("h3", {}, t("refund.byHand")), h("ul", {}, owed.map(item)));
}

/**
 * Cancelling the concert: the operator types its title to confirm; then
 * the refunds' progress, followed until every order is done.
 */
export function cancelConcert(concert, signal, { onCancelled }) {
  const progress = h("p", { class: "cancellation-progress", role: "status" });
  const follow = async () => {
    try {
      const c = await api("GET", `/api/concerts/${concert.id}/cancellation`, undefined, { signal });
      const failed = c.failed ? ` ${t("cancel.failed", { count: c.failed })}` : "";
      if (c.status === "DONE") {
        fill(progress, t("cancel.done", { count: c.refunded }) + failed);
        progress.dataset.status = "DONE";
        return;
      }
      progress.dataset.status = c.status;
      fill(progress, t("cancel.refunding", { count: c.refunded, pending: c.pending }) + failed);
    } catch (e) {
      if (e.name === "AbortError") return;
    }
    if (!signal.aborted) setTimeout(follow, PROGRESS_MS);
  };
  if (concert.cancelledAt) {
    follow();
    return h("section", { class: "cancel-concert", "aria-labelledby": "cancelled-heading" }, h("h2", { id: "cancelled-heading" }, t("concert.cancelledPlain")), concert.cancelReason ? h("p", {}, t("cancel.reasonWas", { reason: concert.cancelReason })) : null, progress);
  }
  const reason = h("textarea", { name: "reason", rows: 2, maxlength: 500, required: true });
  const typed = h("input", { name: "confirmTitle", autocomplete: "off", spellcheck: "false" });
  const go = h("button", { type: "submit", class: "danger", disabled: true }, t("cancel.go"));
  const matches = () => typed.value.trim() === concert.title && reason.value.trim().length > 0;
  for (const input of [typed, reason]) input.addEventListener("input", () => (go.disabled = !matches()));
  const form = h(
    "form",
    {},
    h("p", {}, t("cancel.explained")),
    field(t("cancel.reason"), reason),
    field(t("cancel.typeTitle", { title: concert.title }), typed),
    go,
  );
  const section = h("details", { class: "cancel-concert" }, h("summary", {}, t("cancel.summary")), form, progress);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!matches()) return;
    go.disabled = true;
    try {
      await api("POST", `/api/concerts/${concert.id}/cancel`, { reason: reason.value.trim() });
      form.hidden = true;
      onCancelled();
      tell(t("cancel.underWay", { title: concert.title }), "info");
      follow();
    } catch (e) {
      tell(e.message);
      go.disabled = false;
    }
  });
  return section;
}
