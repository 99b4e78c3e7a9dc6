// The operator's money on the sale view: the takings (sold, refunded, net,
// live), an order given back in whole or in part (a fan calls with their
// order number; what was paid by hand is given back by hand and recorded
// here), and the whole concert cancelled (typed confirmation),
// with its refunds followed until every order is done.

import { api } from "./api.js";
import { field, fill, h, placeName, tell } from "./dom.js";
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

/** Finds an order by its number and gives back all or some of its tickets. */
export function refundForm() {
  const number = h("input", { name: "orderNumber", inputmode: "numeric", autocomplete: "off", required: true, pattern: "[0-9]+" });
  const found = h("div", { class: "refund-order", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "takings-form", "aria-labelledby": "refund-heading" },
    h("h2", { id: "refund-heading" }, t("refund.heading")),
    field(t("refund.orderNumber"), number),
    h("button", { type: "submit" }, t("refund.find")),
    found,
  );
  const show = async (id) => {
    const [order, paid] = await Promise.all([api("GET", `/api/reservations/${id}`), api("GET", `/api/reservations/${id}/payments`)]);
    const owed = owedByHand(paid, () => show(id));
    if (order.status !== "CONFIRMED") {
      fill(found, h("p", {}, t("refund.notConfirmed", { id: String(id) })), owed);
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
    const refund = async (ticketIds) => {
      some.disabled = all.disabled = true;
      try {
        const result = await api("POST", `/api/reservations/${id}/refund`, ticketIds ? { ticketIds } : {});
        const amount = result.currency ? money(result.amount, result.currency) : t("refund.nothing");
        const done = t(result.status === "PENDING" ? "refund.pending" : "refund.done", { id: String(id), amount });
        tell(`${done} ${t(result.reservationStatus === "CONFIRMED" ? "refund.restValid" : "refund.orderCancelled")}`, "info");
        await show(id);
      } catch (e) {
        tell(e.message);
        some.disabled = all.disabled = false;
      }
    };
    some.addEventListener("click", () => {
      const ticked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => Number(i.value));
      if (ticked.length === 0) {
        tell(t("refund.tickFirst"));
        return;
      }
      refund(ticked);
    });
    all.addEventListener("click", () => refund(null));
    fill(
      found,
      h("p", {}, t("refund.found", { id: String(id), count: tickets.length, seats: order.seats.length })),
      h("ul", { class: "refund-tickets" }, boxes),
      h("p", { class: "actions" }, some, all),
      owed,
    );
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = number.value.trim();
    if (!/^[0-9]+$/.test(id)) return;
    try {
      await show(Number(id));
    } catch (e) {
      fill(found);
      tell(e.status === 404 ? t("refund.noOrder", { id }) : e.message);
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
