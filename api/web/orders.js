// The operator's money on the sale view: the takings (sold, refunded, net,
// live), an order given back in whole or in part (a fan calls with their
// order number), and the whole concert cancelled (typed confirmation),
// with its refunds followed until every order is done.

import { api } from "./api.js";
import { field, fill, h, tell } from "./dom.js";
import { money } from "./money.js";

const TAKINGS_MS = 3000;
const PROGRESS_MS = 1000;

/** Sold, refunded and net, kept fresh while the view is open. */
export function takingsTiles(concertId, signal) {
  const values = {};
  const tile = (key, label) => {
    values[key] = h("dd", { "data-metric": key }, "…");
    return h("div", { class: "tile" }, h("dt", {}, label), values[key]);
  };
  const element = h(
    "section",
    { "aria-labelledby": "takings-heading" },
    h("h2", { id: "takings-heading" }, "Takings"),
    h("dl", { class: "tiles", "aria-live": "off" }, tile("ticketsSold", "Tickets sold"), tile("ticketsRefunded", "Tickets refunded"), tile("gross", "Gross"), tile("refundedAmount", "Refunded"), tile("net", "Net")),
  );
  const amount = (minor, currency) => (currency ? money(minor, currency) : "–");
  const tick = async () => {
    try {
      const sales = await api("GET", `/api/concerts/${concertId}/sales`, undefined, { signal });
      const t = sales.total;
      fill(values.ticketsSold, t.sold.toLocaleString());
      fill(values.ticketsRefunded, t.refunded.toLocaleString());
      fill(values.gross, amount(t.gross, sales.currency));
      fill(values.refundedAmount, amount(t.refundedAmount, sales.currency));
      fill(values.net, amount(t.net, sales.currency));
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
    h("h2", { id: "refund-heading" }, "Refund an order"),
    field("Order number", number),
    h("button", { type: "submit" }, "Find the order"),
    found,
  );
  const show = async (id) => {
    const order = await api("GET", `/api/reservations/${id}`);
    if (order.status !== "CONFIRMED") {
      fill(found, h("p", {}, `Order ${id} is ${order.status.toLowerCase()}: only a confirmed order can be refunded.`));
      return;
    }
    const tickets = await api("GET", `/api/reservations/${id}/tickets`);
    const prices = new Map(order.seats.map((s) => [s.seatId, s.price]));
    const boxes = tickets.map((t) => {
      const price = prices.get(t.seatId);
      const label = `${t.seatNumber}${t.category ? `, ${t.category}` : ""}${price != null && order.currency ? `, ${money(price, order.currency)}` : ""}${t.checkedInAt ? " (used at the door)" : ""}`;
      return h("li", {}, h("label", {}, h("input", { type: "checkbox", value: t.ticketId, disabled: Boolean(t.checkedInAt) }), ` ${label}`));
    });
    const some = h("button", { type: "button" }, "Refund the ticked tickets");
    const all = h("button", { type: "button", class: "danger" }, "Refund the whole order");
    const refund = async (ticketIds) => {
      some.disabled = all.disabled = true;
      try {
        const result = await api("POST", `/api/reservations/${id}/refund`, ticketIds ? { ticketIds } : {});
        const amount = result.currency ? money(result.amount, result.currency) : "nothing";
        const left = result.reservationStatus === "CONFIRMED" ? " The rest of the order stays valid." : " The order is cancelled.";
        tell(`Order ${id}: ${amount} ${result.status === "PENDING" ? "is being refunded" : "refunded"}; the seats are back on sale.${left}`, "info");
        await show(id);
      } catch (e) {
        tell(e.message);
        some.disabled = all.disabled = false;
      }
    };
    some.addEventListener("click", () => {
      const ticked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => Number(i.value));
      if (ticked.length === 0) {
        tell("Tick the tickets to refund first.");
        return;
      }
      refund(ticked);
    });
    all.addEventListener("click", () => refund(null));
    fill(
      found,
      h("p", {}, `Order ${id}: ${tickets.length} valid ticket${tickets.length === 1 ? "" : "s"} of ${order.seats.length}. Tick the ones to give back, or refund the whole order.`),
      h("ul", { class: "refund-tickets" }, boxes),
      h("p", { class: "actions" }, some, all),
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
      tell(e.status === 404 ? `There is no order ${id}.` : e.message);
    }
  });
  return form;
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
      const failed = c.failed ? ` ${c.failed} refused by the payment provider: look at them.` : "";
      if (c.status === "DONE") {
        fill(progress, `Cancelled: every order refunded (${c.refunded}).${failed}`);
        progress.dataset.status = "DONE";
        return;
      }
      progress.dataset.status = c.status;
      fill(progress, `Refunding: ${c.refunded} orders refunded, ${c.pending} to go.${failed}`);
    } catch (e) {
      if (e.name === "AbortError") return;
    }
    if (!signal.aborted) setTimeout(follow, PROGRESS_MS);
  };
  if (concert.cancelledAt) {
    follow();
    return h("section", { class: "cancel-concert", "aria-labelledby": "cancelled-heading" }, h("h2", { id: "cancelled-heading" }, "This concert is cancelled"), concert.cancelReason ? h("p", {}, `Reason: ${concert.cancelReason}`) : null, progress);
  }
  const reason = h("textarea", { name: "reason", rows: 2, maxlength: 500, required: true });
  const typed = h("input", { name: "confirmTitle", autocomplete: "off", spellcheck: "false" });
  const go = h("button", { type: "submit", class: "danger", disabled: true }, "Cancel the concert and refund everyone");
  const matches = () => typed.value.trim() === concert.title && reason.value.trim().length > 0;
  for (const input of [typed, reason]) input.addEventListener("input", () => (go.disabled = !matches()));
  const form = h(
    "form",
    {},
    h("p", {}, "The sale closes at once, every hold ends, and every order is refunded in full; each fan is mailed. This cannot be undone."),
    field("Reason, as the fans will read it", reason),
    field(`Type the concert's title (${concert.title}) to confirm`, typed),
    go,
  );
  const section = h("details", { class: "cancel-concert" }, h("summary", {}, "Cancel this concert…"), form, progress);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!matches()) return;
    go.disabled = true;
    try {
      await api("POST", `/api/concerts/${concert.id}/cancel`, { reason: reason.value.trim() });
      form.hidden = true;
      onCancelled();
      tell(`${concert.title} is cancelled: the refunds are under way.`, "info");
      follow();
    } catch (e) {
      tell(e.message);
      go.disabled = false;
    }
  });
  return section;
}
