// The concerts, the soonest show first, each with where its sale stands,
// what it costs from and whether any seat is left.

import { api, isAdmin } from "./api.js";
import { fill, h, when } from "./dom.js";
import { money } from "./money.js";

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
  if (state.phase === "cancelled") return "Cancelled";
  if (state.phase === "open") return concert.availableSeats === 0 ? "Sold out" : "On sale";
  if (state.phase === "lottery") return `Lottery open · sale opens ${when(concert, "opensAt")}`;
  if (state.phase === "presale") return `Presale with access codes · sale opens ${when(concert, "opensAt")}`;
  return `Sale opens ${when(concert, "opensAt")}`;
}

/** "from €39.00": the cheapest price category, when the concert has prices. */
function from(concert) {
  const categories = concert.categories || [];
  if (categories.length === 0) return null;
  const cheapest = categories.reduce((a, b) => (b.price < a.price ? b : a));
  return `from ${money(cheapest.price, cheapest.currency)}`;
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
      h("p", { class: "muted" }, [c.seatCount === 1 ? "1 seat" : `${c.seatCount.toLocaleString()} seats`, from(c), saleLabel(c)].filter(Boolean).join(" · ")),
      isAdmin()
        ? h(
            "p",
            { class: "actions" },
            h("a", { href: `#/admin/concerts/${c.id}/sale` }, "On-sale view"),
            h("a", { href: `#/admin/concerts/${c.id}/edit` }, "Edit"),
          )
        : null,
    ),
  );
  const pager = h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    page > 0 ? h("a", { href: `#/?page=${page - 1}` }, "← Earlier") : null,
    page + 1 < list.totalPages ? h("a", { href: `#/?page=${page + 1}` }, "Later →") : null,
  );
  fill(
    main,
    h("h1", {}, "Concerts"),
    isAdmin() ? h("p", {}, h("a", { class: "button", href: "#/admin/concerts/new" }, "New concert")) : null,
    items.length ? h("ul", { class: "cards" }, items) : h("p", { class: "muted" }, "No concerts yet."),
    pager,
  );
}
