// Orders voided after a sale, for owners and finance: the concert's orders
// whose buyers share a signal the box office has (shown as signals, never
// as a verdict), picked by hand, voided with a reason, each refunded.

import { api } from "./api.js";
import { field, fill, h, table, tell } from "./dom.js";
import { notPermitted, operatorTabs } from "./admin.js";
import { t } from "./i18n.js";

export async function voidOrdersView(main, { params, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "VOID_ORDERS", concert)) return;
  const orders = await api("GET", `/api/concerts/${id}/orders/signals`, undefined, { signal });
  const picks = new Map();
  const rows = orders.map((o) => {
    const pick = h("input", { type: "checkbox", name: `pick-${o.reservationId}`, "aria-label": t("void.pick", { order: String(o.reservationId) }) });
    picks.set(o.reservationId, pick);
    const signals = o.signals.map((s) => t(`void.signal.${s.kind}`, { count: s.accounts })).join(" · ");
    return h("tr", { "data-order": o.reservationId }, h("td", {}, pick), h("td", {}, String(o.reservationId)), h("td", {}, o.nickName), h("td", {}, signals));
  });
  const reason = h("input", { name: "reason", required: true, maxlength: 500 });
  const outcome = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "narrow", "aria-labelledby": "void-heading" }, h("h2", { id: "void-heading" }, t("void.voidHeading")), field(t("void.reason"), reason), h("button", { type: "submit", class: "danger" }, t("void.button")), outcome);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const reservationIds = [...picks].filter(([, box]) => box.checked).map(([order]) => order);
    if (!reservationIds.length) {
      tell(t("void.noneChosen"));
      return;
    }
    try {
      const done = await api("POST", `/api/concerts/${id}/orders/void`, { reservationIds, reason: reason.value.trim(), refund: true });
      fill(outcome, h("p", { role: "status" }, t("void.done", { voided: done.voided, released: done.released, skipped: done.skipped })));
    } catch (e) {
      tell(e.message);
    }
  });
  fill(
    main,
    h("h1", {}, t("void.heading", { title: concert.title })),
    operatorTabs(concert, "orders"),
    h("p", { class: "muted" }, t("void.explained")),
    rows.length ? table(["void.pickColumn", "void.orderColumn", "void.buyerColumn", "void.signalsColumn"], rows) : h("p", { class: "muted" }, t("void.none")),
    rows.length ? form : null,
  );
}
