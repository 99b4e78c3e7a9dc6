// The desk at the venue, for a BOX_OFFICE clerk: a shift opened with the
// cash in the drawer; a buyer's seats asked of the line (behind everyone
// who asked first), paid in cash or by card, their tickets printed or
// mailed; money given back from the drawer; and the shift closed with the
// cash counted against what the box office says the drawer should hold.

import { api } from "./api.js";
import { field, fill, h, table, tell } from "./dom.js";
import { notPermitted, operatorTabs } from "./admin.js";
import { minorOf, money } from "./money.js";
import { t } from "./i18n.js";

const POLL_MS = 500;

export async function deskView(main, { params, query, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "SELL_AT_DESK", concert)) return;
  const currency = concert.categories?.[0]?.currency || null;
  const amount = (minor) => (currency ? money(minor, currency) : String(minor));
  const heading = h("h1", {}, t("desk.heading", { title: concert.title }));
  const body = h("div", { class: "desk" });
  fill(main, heading, operatorTabs(concert, "desk"), body);
  const again = () => deskView(main, { params, signal });
  const shift = await api("GET", `/api/concerts/${id}/desk/my-shift`, undefined, { signal });
  if (!shift) {
    fill(body, openForm(id, currency, again));
    return;
  }
  const sold = Number(query?.get("sold")) || null;
  fill(
    body,
    h("p", { class: "shift-state", "data-shift": shift.id }, t("desk.open", { float: amount(shift.float), cash: amount(shift.expectedCash) })),
    sold ? h("p", {}, h("a", { class: "button print-tickets", href: `#/orders/${sold}/tickets` }, t("desk.print", { order: String(sold) }))) : null,
    sellForm(concert, shift, amount, signal, again),
    refundForm(shift, again),
    closeForm(shift, currency, amount),
  );
}

function openForm(concertId, currency, again) {
  const float = h("input", { name: "float", inputmode: "decimal", required: true, value: "0" });
  const form = h("form", { class: "narrow", "aria-labelledby": "open-heading" }, h("h2", { id: "open-heading" }, t("desk.openHeading")), field(t("desk.float"), float), h("button", { type: "submit", class: "primary" }, t("desk.openButton")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("POST", `/api/concerts/${concertId}/desk/shifts`, { float: minorOf(float.value, currency || "XXX") });
      await again();
    } catch (e) {
      tell(e.message);
    }
  });
  return form;
}

/** A buyer's places asked of the line: by category (or standing area) and count. */
function sellForm(concert, shift, amount, signal, again) {
  const pools = [
    ...(concert.categories || []).map((c) => ({ value: `category:${c.name}`, label: c.name })),
    ...(concert.areas || []).map((a) => ({ value: `area:${a.name}`, label: a.name })),
  ];
  const what = h("select", { name: "pool" }, pools.map((p) => h("option", { value: p.value }, p.label)));
  const count = h("input", { name: "count", type: "number", min: 1, max: concert.maxSeatsPerOrder, value: 1, required: true });
  const email = h("input", { name: "email", type: "email", autocomplete: "off", maxlength: 254 });
  const outcome = h("div", { class: "desk-sale", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "narrow", "aria-labelledby": "sell-heading" },
    h("h2", { id: "sell-heading" }, t("desk.sellHeading")),
    pools.length ? field(t("desk.what"), what) : null,
    field(t("desk.count"), count),
    field(t("desk.email"), email),
    h("button", { type: "submit", class: "primary" }, t("desk.ask")),
    outcome,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const [kind, name] = what.value.split(/:(.*)/s);
    const order = { concertId: concert.id, [kind === "area" ? "area" : "category"]: name, count: Number(count.value) };
    try {
      const asked = await api("POST", `/api/desk/shifts/${shift.id}/requests`, { order, ...(email.value.trim() ? { email: email.value.trim() } : {}) });
      fill(outcome, h("p", { role: "status" }, t("desk.inLine")));
      const decided = await decision(asked.queueId, signal);
      if (decided.status !== "SUCCESS") {
        fill(outcome, h("p", { class: "notice error", role: "status" }, t("desk.notWon")));
        return;
      }
      const held = await api("GET", `/api/reservations/${decided.reservationId}`, undefined, { signal });
      fill(outcome, payment(held, shift, amount, again));
    } catch (e) {
      if (e.name !== "AbortError") tell(e.message);
    }
  });
  return form;
}

/** The request's answer, once the line has decided it. */
async function decision(queueId, signal) {
  for (;;) {
    const status = await api("GET", `/api/reservations/status/${queueId}`, undefined, { signal });
    if (status.status !== "PENDING" && status.status !== "PROCESSING" && status.status !== "WAITING") return status;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** The held order: paid in cash or by card, then its tickets to print. */
function payment(held, shift, amount, again) {
  const pay = (method) => async () => {
    try {
      const sold = await api("POST", `/api/desk/shifts/${shift.id}/payments`, { reservationId: held.reservationId, method });
      tell(t("desk.sold", { order: String(sold.reservationId) }), "info", { acrossNavigation: true });
      location.hash = `#/admin/concerts/${sold.concertId}/desk?sold=${sold.reservationId}`;
    } catch (e) {
      tell(e.message);
    }
  };
  return h(
    "div",
    { class: "desk-payment", "data-reservation": held.reservationId },
    h("p", {}, t("desk.held", { order: String(held.reservationId), places: held.seats.map((s) => s.seatNumber).join(", "), total: held.total == null ? "–" : amount(held.total) })),
    h("button", { type: "button", class: "primary", onclick: pay("CASH") }, t("desk.cash")),
    " ",
    h("button", { type: "button", onclick: pay("CARD") }, t("desk.card")),
  );
}

/** Money given back from the drawer for an order, by its number. */
function refundForm(shift, again) {
  const order = h("input", { name: "refundOrder", inputmode: "numeric", required: true });
  const form = h("form", { class: "narrow", "aria-labelledby": "desk-refund-heading" }, h("h2", { id: "desk-refund-heading" }, t("desk.refundHeading")), field(t("desk.order"), order), h("button", { type: "submit" }, t("desk.refundButton")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("POST", `/api/desk/shifts/${shift.id}/refunds`, { reservationId: Number(order.value) });
      tell(t("desk.refunded", { order: order.value }), "info", { acrossNavigation: true });
      await again();
    } catch (e) {
      tell(e.message);
    }
  });
  return form;
}

/** The close: the cash counted, then expected against counted by method. */
function closeForm(shift, currency, amount) {
  const counted = h("input", { name: "countedCash", inputmode: "decimal", required: true });
  const summary = h("div", { class: "shift-summary", "aria-live": "polite" });
  const form = h("form", { class: "narrow", "aria-labelledby": "close-heading" }, h("h2", { id: "close-heading" }, t("desk.closeHeading")), field(t("desk.counted"), counted), h("button", { type: "submit", class: "danger" }, t("desk.closeButton")), summary);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const closed = await api("POST", `/api/desk/shifts/${shift.id}/close`, { countedCash: minorOf(counted.value, currency || "XXX") });
      fill(summary, shiftSummary(closed, amount));
      form.querySelector("button").disabled = true;
    } catch (e) {
      tell(e.message);
    }
  });
  return form;
}

/** A closed shift: by method, and the drawer's difference. */
export function shiftSummary(shift, amount) {
  const row = (key, total) => h("tr", { "data-method": key }, h("td", {}, t(`desk.${key}`)), h("td", {}, amount(total.sales)), h("td", {}, amount(total.refunds)), h("td", {}, amount(total.net)));
  const difference = shift.difference ?? 0;
  return h(
    "div",
    { "data-closed": shift.id },
    table(["desk.method", "desk.sales", "desk.refunds", "desk.net"], [row("cash", shift.cash), row("card", shift.card)]),
    h(
      "dl",
      { class: "tiles" },
      h("div", { class: "tile" }, h("dt", {}, t("desk.expected")), h("dd", { "data-metric": "expectedCash" }, amount(shift.expectedCash))),
      h("div", { class: "tile" }, h("dt", {}, t("desk.countedTile")), h("dd", { "data-metric": "countedCash" }, amount(shift.countedCash))),
      h("div", { class: "tile" }, h("dt", {}, t("desk.difference")), h("dd", { "data-metric": "difference", class: difference === 0 ? "" : "short" }, amount(difference))),
    ),
  );
}
