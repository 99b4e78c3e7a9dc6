// The operator's view of a concert's waiting list: who waits for what, in
// the order they joined, and what became of the entries that ended.

import { api } from "./api.js";
import { dateTime, fill, h, table } from "./dom.js";
import { notPermitted, operatorTabs } from "./admin.js";
import { t } from "./i18n.js";

const STATUSES = { WAITING: "waitingAdmin.waiting", OFFERED: "waitingAdmin.offered", LEFT: "waitingAdmin.left" };

export async function waitingListView(main, { params, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "MANAGE_WAITING_LIST", concert)) return;
  const entries = await api("GET", `/api/concerts/${id}/waiting-list?page=0&size=1000`, undefined, { signal });
  const waiting = entries.filter((e) => e.status === "WAITING");
  const offered = entries.filter((e) => e.status === "OFFERED");
  let place = 0;
  const rows = entries.map((e) =>
    h(
      "tr",
      { "data-entry": e.id },
      h("td", {}, e.status === "WAITING" ? String((place += 1)) : "–"),
      h("td", {}, e.nickName),
      h("td", {}, t("concert.seats", { count: e.seats })),
      h("td", {}, e.area ? t("waiting.standing", { area: e.area }) : e.category || t("waiting.anySeat")),
      h("td", {}, h("span", { class: `status ${e.status.toLowerCase()}` }, t(STATUSES[e.status] || "reservations.other"))),
      h("td", {}, e.reservationId ? t("waitingAdmin.order", { id: String(e.reservationId) }) : "–"),
      h("td", {}, dateTime(e.joinedAt, concert.timeZone)),
    ),
  );
  const head = ["waitingAdmin.place", "waitingAdmin.fan", "waitingAdmin.seats", "waitingAdmin.for", "waitingAdmin.state", "waitingAdmin.offer", "waitingAdmin.joined"];
  fill(
    main,
    h("h1", {}, t("waitingAdmin.heading", { title: concert.title })),
    operatorTabs(concert, "waiting-list"),
    h("p", { class: "waiting-summary" }, t("waitingAdmin.summary", { count: waiting.length, offered: offered.length, seats: waiting.reduce((n, e) => n + e.seats, 0) })),
    h("p", { class: "muted" }, t("waitingAdmin.explained", { minutes: Math.round(concert.waitingListOfferSeconds / 60) })),
    entries.length
      ? table(head, rows)
      : h("p", { class: "muted" }, t("waitingAdmin.none")),
  );
}
