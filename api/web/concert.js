// A concert's page: its sale state, its seat map, and the checkout (the
// request in line, then the hold and its confirm, or "taken by someone
// faster").
// Long because the request's whole journey (in line, decided, held, paid
// or confirmed, refused) is drawn in one place, where the fan is.

import { Problem, api, currentUser } from "./api.js";
import { clock, countdown, fill, h, listOf, placesOf, quiet, roughly, tell, when } from "./dom.js";
import { saleState } from "./concerts.js";
import { follow } from "./events.js";
import { WaitingList } from "./waiting-list.js";
import { SeatMap } from "./seatmap.js";
import { money, totalOf } from "./money.js";
import { BestAvailable, Standing, bestFirst } from "./best.js";
import { t, tNodes } from "./i18n.js";
import { colourOf } from "./palette.js";

export async function concertView(main, { signal, params }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  const counts = h("p", { class: "counts", "aria-live": "off" });
  const choice = h("p", { class: "choice", id: "choice" }, t("concert.pickSeat"));
  const reserve = h("button", { type: "button", class: "primary", disabled: true, "aria-describedby": "choice" }, t("concert.reserve"));
  const sale = h("div", { class: "sale-state" });
  const line = h("section", { class: "line", "aria-live": "polite", "aria-label": t("concert.yourRequest") });
  const code = h("input", { name: "accessCode", autocomplete: "off", spellcheck: "false", placeholder: t("concert.accessCodeExample"), maxlength: 64 });
  const codeField = h("label", { class: "access-code", hidden: true }, t("concert.accessCode"), code);
  // A refused request is said where the fan is looking: under the button
  // pressed, or under the code field when the code is what is wrong.
  const refusal = h("p", { class: "refusal", role: "alert", hidden: true });
  const refuse = (message, near) => {
    fill(refusal, message);
    near.after(refusal);
    refusal.hidden = false;
    refusal.scrollIntoView({ block: "nearest" });
  };
  // The puzzle's code only where a concert asks for one.
  const proof = concert.proofOfWork > 0 ? new (await import("./proof.js")).ProofOfWork(id) : null;
  const map = new SeatMap(id, {
    selectable: true,
    max: concert.maxSeatsPerOrder,
    onChange: (ids) => {
      const names = map.selectedNames();
      const total = map.selectedTotal();
      const seats = listOf(names);
      fill(choice, ids.length ? (total ? t("concert.selectedTotal", { seats, total }) : t("concert.selected", { seats })) : t("concert.pickSeat"));
      reserve.disabled = ids.length === 0 || ["soon", "cancelled"].includes(saleState(concert).phase) || busy;
    },
    // While the fan's own request is in line its seats turn held or sold
    // for them: the decision tells, not this.
    onTaken: (numbers) => {
      if (busy) return;
      tell(t("concert.takenFromPick", { count: numbers.length, seats: numbers.join(", ") }), "info");
    },
    onCounts: (c) => {
      fill(counts, h("span", { class: "free" }, t("concert.freeCount", { count: c.available })), " · ", h("span", { class: "held" }, t("concert.heldCount", { count: c.held })), " · ", h("span", { class: "sold" }, t("concert.soldCount", { count: c.sold })));
      waiting.counts(c);
      if (soldOut !== (c.available === 0)) {
        soldOut = c.available === 0;
        showSale();
      }
      best.left(c.byCategory);
      standing.left(c.byArea);
    },
  });
  // Joining the list asks what reserving asks: the presale's code, the
  // concert's proof of work.
  const waiting = new WaitingList(concert, {
    signal,
    onOffer: (offer) => showReservation(offer, { first: true }),
    refuse: (message, near) => refuse(message, near),
    accessCode: () => (!codeField.hidden && code.value.trim()) || undefined,
    proof,
  });
  map.element.addEventListener("seatmap-message", (e) => tell(e.detail, "info"));
  let busy = false;
  let soldOut = false;

  const showSale = () => {
    const state = saleState(concert);
    codeField.hidden = !(state.phase === "presale" || state.presale);
    if (state.phase === "cancelled") {
      reserve.hidden = true;
      if (best.element) best.element.hidden = true;
      if (standing.element) standing.element.hidden = true;
      waiting.element.hidden = true;
      fill(
        sale,
        h("p", { class: "badge cancelled" }, t("concerts.cancelled")),
        h(
          "div",
          { class: "notice error cancelled-show", role: "alert" },
          h("p", {}, h("strong", {}, concert.cancelReason ? t("concert.cancelledBecause", { reason: concert.cancelReason }) : t("concert.cancelledPlain"))),
          h("p", {}, tNodes("concert.refundedInFull", { reservations: h("a", { href: "#/me/reservations" }, t("nav.reservations")) })),
        ),
      );
    } else if (state.phase === "open") {
      // Nothing left to sell is not "on sale": the waiting list is.
      fill(sale, soldOut ? h("p", { class: "badge sold-out" }, t("concerts.soldOut")) : h("p", { class: "badge open" }, t("concert.onSaleNow")));
    } else if (state.phase === "presale") {
      const left = h("strong", { class: "countdown" });
      fill(
        sale,
        h("p", { class: "badge presale" }, t("concert.presale")),
        h("p", {}, tNodes(state.lottery ? "concert.presaleThenLottery" : "concert.presaleThenSale", { left })),
      );
      countdown(left, state.lottery ? state.from : state.opens, clock, () => {
        showSale();
        map.onChange(map.selected());
      });
    } else if (state.phase === "lottery") {
      const left = h("strong", { class: "countdown" });
      fill(sale, h("p", { class: "badge lottery" }, t("concert.lotteryOpen")), h("p", {}, tNodes("concert.lotteryExplained", { left })));
      countdown(left, state.opens, clock, showSale);
    } else {
      const left = h("strong", { class: "countdown" });
      const next = state.lottery ? state.from : state.opens;
      const presaleFirst = state.presaleFrom !== null && state.presaleFrom < next;
      const until = presaleFirst ? state.presaleFrom : next;
      const what = presaleFirst ? "concert.presaleOpensIn" : state.lottery ? "concert.lotteryOpensIn" : "concert.saleOpensIn";
      fill(sale, h("p", { class: "badge soon" }, t("concert.notYet")), h("p", {}, tNodes(what, { left, when: when(concert, "opensAt") })));
      countdown(left, until, clock, () => {
        showSale();
        map.onChange(map.selected());
      });
    }
  };

  const decided = async (status) => {
    if (status.status === "SUCCESS") {
      const reservation = await api("GET", `/api/reservations/${status.reservationId}`, undefined, { signal });
      showReservation(reservation);
    } else if (status.reason === "USER_LIMIT_REACHED") {
      fill(line, h("h2", {}, t("concert.overLimit")), h("p", {}, t("concert.overLimitExplained", { count: concert.maxSeatsPerUser })));
      line.className = "line failed";
      map.clear();
    } else if (status.reason === "SOLD_OUT") {
      fill(line, h("h2", {}, t("concert.notEnough")), h("p", {}, t("concert.notEnoughExplained")));
      line.className = "line failed";
      await map.refresh();
    } else if (status.reason === "NO_ADJACENT_SEATS") {
      fill(line, h("h2", {}, t("concert.noAdjacent")), h("p", {}, t("concert.noAdjacentExplained")));
      line.className = "line failed";
      await map.refresh();
    } else if (status.reason === "SEAT_TAKEN") {
      fill(line, h("h2", {}, t("concert.taken")), h("p", {}, t("concert.takenExplained", { count: status.seatIds.length })));
      line.className = "line failed";
      map.clear();
      await map.refresh();
    } else {
      fill(line, h("h2", {}, t("concert.notReserved")), h("p", {}, t("concert.notDecided")));
      line.className = "line failed";
    }
    busy = false;
    map.onChange(map.selected());
  };

  // `first`: found on arrival (an offer from the waiting list, a hold from
  // before a reload), it is the first thing on the page, above the badge.
  const showReservation = async (reservation, { first = false } = {}) => {
    if (first && reservation.status === "HELD") {
      main.querySelector(".concert-head")?.after(line);
      line.scrollIntoView({ block: "nearest" });
    }
    const w = words(reservation.seats);
    map.clear();
    const ids = reservation.seats.map((s) => s.seatId);
    map.own(ids, reservation.status === "HELD" || reservation.status === "CONFIRMED");
    map.refresh().catch(() => {});
    if (reservation.status === "CONFIRMED") {
      line.className = "line confirmed";
      fill(
        line,
        h("h2", {}, t(reservation.paymentReference ? "concert.paidAndConfirmed" : "concert.confirmed")),
        h("p", {}, w("concert.areYours"), " ", h("a", { href: "#/me/tickets" }, t("concert.yourTickets")), " · ", h("a", { href: "#/me/reservations" }, t("nav.reservations"))),
      );
      return;
    }
    if (reservation.status !== "HELD") {
      line.className = "line failed";
      fill(line, h("h2", {}, t(reservation.status === "CANCELLED" ? "concert.reservationCancelled" : "concert.reservationExpired")), h("p", {}, w("concert.theseWere")));
      return;
    }
    const left = h("strong", { class: "countdown hold-countdown" });
    // With payments on, a priced hold is paid for (Stripe sells it); a
    // free one is confirmed as always.
    // Paying's code comes with the first hold: a look at the map needs none.
    const { PayPanel, paidOnline, refundWords } = await import("./payment.js");
    const online = await paidOnline(reservation);
    const pay = online
      ? new PayPanel(reservation, {
          signal,
          onSettled: (outcome) => {
            stop();
            if (outcome.paid) {
              showReservation(outcome.paid);
              return;
            }
            line.className = "line failed refunded";
            map.refresh().catch(() => {});
            fill(line, h("h2", {}, t("concert.endedBeforePayment")), h("p", { class: "refund" }, t("concert.twoSentences", { first: refundWords(outcome.refunded), second: w("concert.wentBack") })));
            map.own(ids, false);
          },
        })
      : null;
    const total = totalOf(reservation.seats, reservation.currency);
    // Priced, without payments online: paid at the box office's desk,
    // where the operator confirms it (a fan's own confirm is no payment).
    const atDesk = !online && Boolean(total);
    const confirm = online || atDesk ? null : h("button", { type: "button", class: "primary" }, t("concert.confirm"));
    const cancel = h("button", { type: "button" }, w("concert.release"));
    line.className = "line held";
    const heading = t(reservation.source === "WAITING_LIST" ? "concert.offerHeld" : "concert.held");
    const summary = online || atDesk ? (total ? "concert.payWithinTotal" : "concert.payWithin") : "concert.confirmWithin";
    fill(
      line,
      h("h2", {}, heading),
      h("p", { class: "hold-summary" }, w(summary, { left, total })),
      h("p", {}, w("concert.areYoursUntil")),
      pay?.element,
      atDesk ? h("p", { class: "pay-at-desk" }, t("concert.payAtDesk")) : null,
      h("p", { class: "actions" }, confirm, cancel),
    );
    const stop = countdown(left, reservation.holdExpiresAt, clock, () => {
      // A payment on its way decides for itself (sold, or refunded).
      if (pay?.busy) return;
      line.className = "line failed";
      fill(line, h("h2", {}, t("concert.holdEnded")), h("p", {}, w("concert.wentBack")));
      map.own(ids, false);
      map.refresh().catch(() => {});
    });
    confirm?.addEventListener("click", async () => {
      confirm.disabled = true;
      try {
        const done = await api("POST", `/api/reservations/${reservation.reservationId}/confirm`, {});
        stop();
        showReservation(done);
      } catch (e) {
        tell(e.message);
        confirm.disabled = false;
      }
    });
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      try {
        await api("POST", `/api/reservations/${reservation.reservationId}/cancel`, {});
        stop();
        line.className = "line";
        fill(line, h("h2", {}, w("concert.released")), h("p", {}, w("concert.areBack")));
        map.own(ids, false);
        map.refresh().catch(() => {});
      } catch (e) {
        tell(e.message);
        cancel.disabled = false;
      }
    });
    (confirm || pay?.button || cancel).focus();
  };

  const inLine = (status) => {
    line.className = "line waiting";
    if (status.status === "WAITING") {
      const left = h("strong", { class: "countdown" });
      fill(line, h("h2", {}, t("concert.inLottery")), h("p", {}, tNodes("concert.drawnIn", { left })));
      if (status.opensAt) countdown(left, status.opensAt, clock);
    } else if (status.status === "PENDING" || status.status === "PROCESSING") {
      const place = status.position ? t("concert.position", { position: status.position }) : t("concert.inLine");
      const wait = status.estimatedWaitMs !== null && status.estimatedWaitMs !== undefined ? ` · ${roughly(status.estimatedWaitMs)}` : "";
      fill(line, h("h2", {}, t("concert.requestInLine")), h("p", { class: "position" }, place + wait));
    }
  };

  const followRequest = async (queueId) => {
    busy = true;
    reserve.disabled = true;
    inLine({ status: "PENDING" });
    try {
      const status = await follow(queueId, inLine, signal);
      await decided(status);
    } catch (e) {
      if (e.name === "AbortError") return;
      busy = false;
      tell(e.message);
    }
  };

  const send = async (body, pressed) => {
    if (!currentUser()) {
      location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
      return;
    }
    quiet();
    refusal.hidden = true;
    reserve.disabled = true;
    best.disabled = true;
    standing.disabled = true;
    if (!codeField.hidden && code.value.trim()) body.accessCode = code.value.trim();
    try {
      const headers = proof ? { "Proof-Of-Work": await proof.solve(signal) } : {};
      const accepted = await api("POST", "/api/reservations", body, { headers });
      await followRequest(accepted.queueId);
    } catch (e) {
      if (e instanceof Problem && e.code === "QUEUE_DUPLICATED" && e.body.queueId) {
        // A second click: follow the request already in line.
        await followRequest(e.body.queueId);
        return;
      }
      if (e.name === "AbortError") return;
      const aboutTheCode = e instanceof Problem && e.code.startsWith("ACCESS_CODE");
      refuse(e instanceof Problem && REFUSALS[e.code] ? t(REFUSALS[e.code]) : e.message, aboutTheCode ? codeField : pressed);
      if (aboutTheCode) code.focus();
      reserve.disabled = false;
    } finally {
      best.disabled = false;
      standing.disabled = false;
    }
  };
  const best = new BestAvailable(concert, { onAsk: ({ category, count, allowSplit }) => send({ concertId: id, category, count, ...(allowSplit ? { allowSplit } : {}) }, best.button) });
  const standing = new Standing(concert, { onAsk: ({ area, count }) => send({ concertId: id, area, count }, standing.button) });
  reserve.addEventListener("click", () => {
    const ids = map.selected();
    if (ids.length === 0) return;
    send(ids.length === 1 ? { seatId: ids[0] } : { seatIds: ids }, reserve);
  });
  const first = bestFirst(concert);
  const priceKey = prices(concert);
  // A cancelled show is cancelled everywhere: nothing to pick from, no
  // price, no count of free seats; only its badge and its reason.
  const cancelled = saleState(concert).phase === "cancelled";

  fill(
    main,
    h(
      "div",
      { class: "concert-head" },
      h("h1", {}, concert.title),
      h("p", {}, `${concert.venue} · ${when(concert, "concertDate")}`),
      h("p", { class: "muted" }, t("concert.rules", { hold: holdText(concert), perOrder: concert.maxSeatsPerOrder, perFan: concert.maxSeatsPerUser })),
    ),
    sale,
    // The presale's code sits with the buttons it unlocks.
    first && !cancelled ? codeField : null,
    first && !cancelled ? standing.element : null,
    first && !cancelled ? best.element : null,
    cancelled
      ? null
      : h(
          "div",
          { class: "concert-body" },
          h("div", { class: "map-wrap" }, h("div", { class: "stage", "aria-hidden": "true" }, t("concert.stage")), map.element, legend(concert), priceKey),
          h("aside", { class: "checkout", "aria-label": t("concert.checkout") }, counts, first ? null : best.element, first ? null : codeField, choice, reserve, proof?.element, line, waiting.element),
        ),
  );
  showSale();
  if (cancelled) return;
  await map.load();
  // A plan draws a free seat in its colour, a grid in a pale tint of it.
  priceKey?.classList.toggle("solid", Boolean(map.plan));
  map.start();
  // Seats this fan holds or bought already, told apart on the map; a
  // live hold shown with its pay or confirm, as it was before a reload.
  if (currentUser()) {
    api("GET", "/api/users/me/reservations?page=0&size=100", undefined, { signal })
      .then(async (mine) => {
        const here = mine.filter((r) => r.concertId === id);
        map.own(here.filter((r) => ["HELD", "CONFIRMED"].includes(r.status)).flatMap((r) => r.seats.map((s) => s.seatId)));
        const held = here.find((r) => r.status === "HELD" && new Date(r.holdExpiresAt) > Date.now());
        if (!held || busy || line.hasChildNodes()) return;
        showReservation(await api("GET", `/api/reservations/${held.reservationId}`, undefined, { signal }), { first: true });
      })
      .catch(() => {});
  }
  waiting.refresh();
}

/** A refused request in the words of the form it came from. */
const REFUSALS = {
  ACCESS_CODE_REQUIRED: "concert.codeRequired",
  ACCESS_CODE_INVALID: "concert.codeInvalid",
  ACCESS_CODE_USED: "concert.codeUsed",
  CHALLENGE_INVALID: "concert.challengeInvalid",
  CHALLENGE_REQUIRED: "concert.challengeRequired",
};

/**
 * The sentences about a reservation's seats (or standing places: numbered
 * "Floor #12", their entry numbers), agreeing with how many there are.
 */
function words(seats) {
  const count = seats.length;
  const standing = seats.every((s) => s.place?.area || s.seatNumber.includes(" #"));
  const what = t(standing ? "concert.placesNamed" : "concert.seatsNamed", { count, seats: placesOf(seats) });
  const things = t(standing ? "concert.places" : "concert.seats", { count });
  const noun = t(standing ? "concert.placeNoun" : "concert.seatNoun", { count });
  return (key, params = {}) => {
    const all = { count, what, things, noun, ...params };
    return Object.values(params).some((v) => v instanceof Node) ? tNodes(key, all) : t(key, all);
  };
}

/** How long a won order is held, and for what: paying where seats have a price. */
function holdText(concert) {
  const seconds = concert.holdSeconds;
  if (!seconds) return t("concert.yoursAtOnce");
  const span = seconds < 120 ? t("concert.seconds", { count: seconds }) : t("concert.minutes", { count: Math.round(seconds / 60) });
  const priced = (concert.categories || []).some((c) => c.price > 0);
  return t(priced ? "concert.heldForPaying" : "concert.heldFor", { span });
}

/**
 * The price categories, when the concert has prices: the key to the free
 * seats, each swatch drawn as a free seat of its category is.
 */
function prices(concert) {
  if (!concert.categories || concert.categories.length === 0) return null;
  return h(
    "ul",
    { class: "legend prices", "aria-label": t("concert.prices") },
    h("li", { class: "legend-caption" }, t("concert.freeByPrice")),
    ...concert.categories.map((c, i) => {
      const swatch = h("span", { class: "swatch free-seat" });
      swatch.style.setProperty("--cat", colourOf(c, i));
      return h("li", { "data-category": c.name }, swatch, `${c.name} ${money(c.price, c.currency)}`);
    }),
  );
}

/** The seats' states; free ones here only where no price colours them. */
function legend(concert) {
  const priced = concert.categories?.length > 0;
  return h(
    "ul",
    { class: "legend", "aria-label": t("concert.legend") },
    priced ? null : h("li", {}, h("span", { class: "swatch", "data-state": "A" }), t("concert.legendFree")),
    h("li", {}, h("span", { class: "swatch chosen" }), t("concert.legendPick")),
    h("li", {}, h("span", { class: "swatch", "data-state": "M" }), t("concert.legendMine")),
    h("li", {}, h("span", { class: "swatch", "data-state": "H" }), t("concert.legendHeld")),
    h("li", {}, h("span", { class: "swatch", "data-state": "R" }), t("concert.legendSold")),
  );
}
