// The concerts, the soonest show first, each with where its sale stands,
// what it costs from and whether any seat is left.

import { api, can, canSomewhere } from "./api.js";
import { fill, h, when } from "./dom.js";
import { money } from "./money.js";
import { t } from "./i18n.js";

/** Where a concert's sale stands at `now`: before its requests, in its lottery, or open. */
export function saleState(concert, now = Date.now()) {
  if (concert.cancelledAt) return { phase: "cancelled" };
  if (!concert.opensAt) return { phase: "open" };
  const opens = new Date(concert.opensAt).getTime();
  const from = opens - (concert.lotteryWindowSeconds || 0) * 1000;
  const presaleFrom = concert.presaleStartsAt ? new Date(concert.presaleStartsAt).getTime() : null;
  // During a presale a fan with an access code may reserve, lottery or not.
  const presale = presaleFrom !== null && now >= presaleFrom && now < opens;
  if (now >= opens) return { phase: "open" };
  if (now >= from) return { phase: "lottery", opens, presale };
  if (presale) return { phase: "presale", opens, from, lottery: concert.lotteryWindowSeconds > 0 };
  return { phase: "soon", opens, from, lottery: concert.lotteryWindowSeconds > 0, presaleFrom };
}

function saleLabel(concert) {
  const state = saleState(concert);
  if (state.phase === "cancelled") return t("concerts.cancelled");
  if (state.phase === "open") return concert.availableSeats === 0 ? t("concerts.soldOut") : t("concerts.onSale");
  const opens = when(concert, "opensAt");
  if (state.phase === "lottery") return t("concerts.lotteryOpen", { when: opens });
  if (state.phase === "presale") return t("concerts.presale", { when: opens });
  return t("concerts.opens", { when: opens });
}

/** "from €39.00": the cheapest price category, when the concert has prices. */
function from(concert) {
  const categories = concert.categories || [];
  if (categories.length === 0) return null;
  const cheapest = categories.reduce((a, b) => (b.price < a.price ? b : a));
  return t("concerts.from", { price: money(cheapest.price, cheapest.currency) });
}

/** Its seats and its standing places, each counted as what it is. */
function size(c) {
  const places = (c.areas || []).reduce((sum, area) => sum + area.capacity, 0);
  const seats = c.seatCount - places;
  return [seats > 0 || places === 0 ? t("concerts.seats", { count: seats }) : null, places > 0 ? t("concerts.places", { count: places }) : null];
}

/** A concert's pages for staff whose role opens them. */
function staffLinks(c) {
  const links = [
    can(c, "VIEW_SALE") ? h("a", { href: `#/admin/concerts/${c.id}/sale` }, t("concerts.saleView")) : null,
    can(c, "EDIT_CONCERTS") ? h("a", { href: `#/admin/concerts/${c.id}/edit` }, t("concerts.edit")) : null,
    can(c, "SELL_AT_DESK") ? h("a", { href: `#/admin/concerts/${c.id}/desk` }, t("concerts.desk")) : null,
  ].filter(Boolean);
  return links.length ? h("p", { class: "actions" }, links) : null;
}

export async function concertsView(main, { signal, query }) {
  const page = Math.max(0, Number(query.get("page") || 0));
  const list = await api("GET", `/api/concerts?page=${page}&size=20`, undefined, { signal });
  const items = list.content.map((c) =>
    h(
      "li",
      { class: "card" },
      h("h2", {}, h("a", { href: `#/concerts/${c.id}` }, c.title)),
      h("p", {}, `${c.venue} · ${when(c, "concertDate")}`),
      h("p", { class: "muted" }, [...size(c), from(c), saleLabel(c)].filter(Boolean).join(" · ")),
      staffLinks(c),
    ),
  );
  const pager = h(
    "nav",
    { class: "pager", "aria-label": t("concerts.pages") },
    page > 0 ? h("a", { href: `#/?page=${page - 1}` }, t("concerts.earlier")) : null,
    page + 1 < list.totalPages ? h("a", { href: `#/?page=${page + 1}` }, t("concerts.later")) : null,
  );
  fill(
    main,
    h("h1", {}, t("concerts.heading")),
    canSomewhere("EDIT_CONCERTS") ? h("p", {}, h("a", { class: "button", href: "#/admin/concerts/new" }, t("concerts.new"))) : null,
    items.length ? h("ul", { class: "cards" }, items) : h("p", { class: "muted" }, t("concerts.none")),
    pager,
  );
}
