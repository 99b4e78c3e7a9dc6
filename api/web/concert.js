// A concert's page: its sale state, its seat map, and the checkout (the
// request in line, then the hold and its confirm, or "taken by someone
// faster").

import { Problem, api, currentUser } from "./api.js";
import { clock, countdown, fill, h, quiet, roughly, tell, when } from "./dom.js";
import { saleState } from "./concerts.js";
import { follow } from "./events.js";
import { ProofOfWork } from "./proof.js";
import { WaitingList } from "./waiting-list.js";
import { SeatMap } from "./seatmap.js";
import { money, totalOf } from "./money.js";
import { PayPanel, paidOnline, refundWords } from "./payment.js";
import { BestAvailable, Standing, bestFirst } from "./best.js";

export async function concertView(main, { signal, params }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  const counts = h("p", { class: "counts", "aria-live": "off" });
  const choice = h("p", { class: "choice", id: "choice" }, "Pick a seat on the map.");
  const reserve = h("button", { type: "button", class: "primary", disabled: true, "aria-describedby": "choice" }, "Reserve");
  const sale = h("div", { class: "sale-state" });
  const line = h("section", { class: "line", "aria-live": "polite", "aria-label": "Your request" });
  const code = h("input", { name: "accessCode", autocomplete: "off", spellcheck: "false", placeholder: "ABCD-EFGH-JKMN-PQRS", maxlength: 64 });
  const codeField = h("label", { class: "access-code", hidden: true }, "Access code", code);
  const proof = concert.proofOfWork > 0 ? new ProofOfWork(id) : null;
  const map = new SeatMap(id, {
    selectable: true,
    max: concert.maxSeatsPerOrder,
    onChange: (ids) => {
      const numbers = map.selectedNumbers();
      const total = map.selectedTotal();
      fill(choice, ids.length ? `Selected: ${numbers.join(", ")}${total ? ` · ${total}` : ""}` : "Pick a seat on the map.");
      reserve.disabled = ids.length === 0 || ["soon", "cancelled"].includes(saleState(concert).phase) || busy;
    },
    // While the fan's own request is in line its seats turn held or sold
    // for them: the decision tells, not this.
    onTaken: (numbers) => {
      if (busy) return;
      const which = numbers.length === 1 ? `Seat ${numbers[0]} was` : `Seats ${numbers.join(", ")} were`;
      tell(`${which} just taken by someone else and left your selection: pick another.`, "info");
    },
    onCounts: (c) => {
      fill(counts, h("span", { class: "free" }, `${c.available} free`), " · ", h("span", { class: "held" }, `${c.held} held`), " · ", h("span", { class: "sold" }, `${c.sold} sold`));
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
    onOffer: (offer) => showReservation(offer),
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
        h("p", { class: "badge cancelled" }, "Cancelled"),
        h(
          "div",
          { class: "notice error cancelled-show", role: "alert" },
          h("p", {}, h("strong", {}, "This concert is cancelled"), concert.cancelReason ? `: ${concert.cancelReason}` : "."),
          h("p", {}, "Every ticket sold is refunded in full to the card it was paid with; there is nothing you need to do. ", h("a", { href: "#/me/reservations" }, "My reservations"), " shows your refund."),
        ),
      );
    } else if (state.phase === "open") {
      // Nothing left to sell is not "on sale": the waiting list is.
      fill(sale, soldOut ? h("p", { class: "badge sold-out" }, "Sold out") : h("p", { class: "badge open" }, "On sale now"));
    } else if (state.phase === "presale") {
      const left = h("strong", { class: "countdown" });
      fill(
        sale,
        h("p", { class: "badge presale" }, "Presale"),
        h("p", {}, "Fans with an access code can reserve now. ", state.lottery ? "Everyone else can join the lottery before the opening; the sale opens in " : "Everyone else can reserve when the sale opens, in ", left, "."),
      );
      countdown(left, state.lottery ? state.from : state.opens, clock, () => {
        showSale();
        map.onChange(map.selected());
      });
    } else if (state.phase === "lottery") {
      const left = h("strong", { class: "countdown" });
      fill(sale, h("p", { class: "badge lottery" }, "Lottery open"), h("p", {}, "Requests made before the opening are put in a random order when the sale opens: there is no use in being first. The sale opens in ", left, "."));
      countdown(left, state.opens, clock, showSale);
    } else {
      const left = h("strong", { class: "countdown" });
      const next = state.lottery ? state.from : state.opens;
      const presaleFirst = state.presaleFrom !== null && state.presaleFrom < next;
      const until = presaleFirst ? state.presaleFrom : next;
      const what = presaleFirst ? "The presale (with an access code) opens in " : state.lottery ? "The lottery opens in " : "The sale opens in ";
      fill(
        sale,
        h("p", { class: "badge soon" }, "Not on sale yet"),
        h("p", {}, what, left, presaleFirst || state.lottery ? `; the sale opens ${when(concert, "opensAt")}.` : "."),
      );
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
      fill(line, h("h2", {}, "Over your limit"), h("p", {}, `You may have at most ${concert.maxSeatsPerUser} seats of this concert, held, confirmed and requested together.`));
      line.className = "line failed";
      map.clear();
    } else if (status.reason === "SOLD_OUT") {
      fill(line, h("h2", {}, "Not enough seats left"), h("p", {}, "Fewer seats (or standing places) of what you chose were left when your turn came than you asked for. Try fewer tickets, or another category or area."));
      line.className = "line failed";
      await map.refresh();
    } else if (status.reason === "NO_ADJACENT_SEATS") {
      fill(line, h("h2", {}, "No seats side by side left"), h("p", {}, "No block of that many seats together was left when your turn came. Ask again with \"Seats apart are fine\", or for fewer tickets."));
      line.className = "line failed";
      await map.refresh();
    } else if (status.reason === "SEAT_TAKEN") {
      fill(line, h("h2", {}, "Taken by someone faster"), h("p", {}, "Someone ahead of you in line got ", status.seatIds.length > 1 ? "one of these seats" : "this seat", ". The map shows what is still free: pick another."));
      line.className = "line failed";
      map.clear();
      await map.refresh();
    } else {
      fill(line, h("h2", {}, "Not reserved"), h("p", {}, "Your request could not be decided. Please try again."));
      line.className = "line failed";
    }
    busy = false;
    map.onChange(map.selected());
  };

  const showReservation = async (reservation) => {
    const seats = reservation.seats.map((s) => s.seatNumber).join(", ");
    // A standing place is numbered "Floor #12": its entry number.
    const w = words(reservation.seats.length, reservation.seats.every((s) => s.seatNumber.includes(" #")));
    map.clear();
    map.refresh().catch(() => {});
    if (reservation.status === "CONFIRMED") {
      line.className = "line confirmed";
      fill(
        line,
        h("h2", {}, reservation.paymentReference ? "Paid and confirmed" : "Confirmed"),
        h("p", {}, `${w.Seats} ${seats} ${w.are} yours. `, h("a", { href: "#/me/tickets" }, "Your tickets"), " · ", h("a", { href: "#/me/reservations" }, "My reservations")),
      );
      return;
    }
    if (reservation.status !== "HELD") {
      line.className = "line failed";
      fill(line, h("h2", {}, `Reservation ${reservation.status.toLowerCase()}`), h("p", {}, `${w.Seats} ${seats}.`));
      return;
    }
    const left = h("strong", { class: "countdown hold-countdown" });
    // With payments on, a priced hold is paid for (Stripe sells it); a
    // free one is confirmed as always.
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
            fill(line, h("h2", {}, "Your hold ended before the payment arrived"), h("p", { class: "refund" }, `${refundWords(outcome.refunded)}. ${w.Seats} ${seats} went back on sale.`));
          },
        })
      : null;
    const confirm = online ? null : h("button", { type: "button", class: "primary" }, "Confirm");
    const cancel = h("button", { type: "button" }, `Release ${w.Seats.toLowerCase()}`);
    line.className = "line held";
    const heading = reservation.source === "WAITING_LIST" ? "Seats from the waiting list held for you" : "Seats held for you";
    const total = totalOf(reservation.seats, reservation.currency);
    const count = `${reservation.seats.length} ${w.Seats.toLowerCase()}`;
    const verb = online ? "pay" : "confirm";
    fill(
      line,
      h("h2", {}, heading),
      h("p", { class: "hold-summary" }, total ? `${count}, ${total}, ${verb} within ` : `${count}, ${verb} within `, left),
      h("p", {}, `${w.Seats} ${seats} ${w.are} yours until then.`),
      pay?.element,
      h("p", { class: "actions" }, confirm, cancel),
    );
    const stop = countdown(left, reservation.holdExpiresAt, clock, () => {
      // A payment on its way decides for itself (sold, or refunded).
      if (pay?.busy) return;
      line.className = "line failed";
      fill(line, h("h2", {}, "Your hold ended"), h("p", {}, `${w.Seats} ${seats} went back on sale.`));
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
        fill(line, h("h2", {}, `${w.Seats} released`), h("p", {}, `${w.Seats} ${seats} ${w.are} back on sale.`));
        map.refresh().catch(() => {});
      } catch (e) {
        tell(e.message);
        cancel.disabled = false;
      }
    });
    (confirm || pay.button).focus();
  };

  const inLine = (status) => {
    line.className = "line waiting";
    if (status.status === "WAITING") {
      const left = h("strong", { class: "countdown" });
      fill(line, h("h2", {}, "You are in the lottery"), h("p", {}, "Your place is drawn at opening, in ", left, "."));
      if (status.opensAt) countdown(left, status.opensAt, clock);
    } else if (status.status === "PENDING" || status.status === "PROCESSING") {
      const place = status.position ? `Position ${status.position} in line` : "In line";
      const wait = status.estimatedWaitMs !== null && status.estimatedWaitMs !== undefined ? ` · ${roughly(status.estimatedWaitMs)}` : "";
      fill(line, h("h2", {}, "Your request is in line"), h("p", { class: "position" }, place + wait));
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

  const send = async (body) => {
    if (!currentUser()) {
      location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
      return;
    }
    quiet();
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
      tell(e instanceof Problem ? (REFUSALS[e.code] || e.message) : e.message);
      if (e instanceof Problem && e.code.startsWith("ACCESS_CODE")) code.focus();
      reserve.disabled = false;
    } finally {
      best.disabled = false;
      standing.disabled = false;
    }
  };
  const best = new BestAvailable(concert, { onAsk: ({ category, count, allowSplit }) => send({ concertId: id, category, count, ...(allowSplit ? { allowSplit } : {}) }) });
  const standing = new Standing(concert, { onAsk: ({ area, count }) => send({ concertId: id, area, count }) });
  reserve.addEventListener("click", () => {
    const ids = map.selected();
    if (ids.length === 0) return;
    send(ids.length === 1 ? { seatId: ids[0] } : { seatIds: ids });
  });
  const first = bestFirst(concert);

  fill(
    main,
    h(
      "div",
      { class: "concert-head" },
      h("h1", {}, concert.title),
      h("p", {}, `${concert.venue} · ${when(concert, "concertDate")}`),
      h("p", { class: "muted" }, `${holdText(concert.holdSeconds)} · up to ${concert.maxSeatsPerOrder} seats per order, ${concert.maxSeatsPerUser} per fan`),
    ),
    sale,
    first ? standing.element : null,
    first ? best.element : null,
    h(
      "div",
      { class: "concert-body" },
      h("div", { class: "map-wrap" }, h("div", { class: "stage", "aria-hidden": "true" }, "Stage"), map.element, legend(), prices(concert)),
      h("aside", { class: "checkout", "aria-label": "Checkout" }, counts, first ? null : best.element, choice, codeField, reserve, proof?.element, line, waiting.element),
    ),
  );
  showSale();
  await map.load();
  map.start();
  waiting.refresh();
}

/** What a refused request means, in words (the rest say it in their detail). */
const REFUSALS = {
  ACCESS_CODE_REQUIRED: "This is the presale: enter your access code to reserve.",
  ACCESS_CODE_INVALID: "That access code is not valid for this concert. Check it and try again.",
  ACCESS_CODE_USED: "That access code has been used up (or by another account).",
  CHALLENGE_INVALID: "The puzzle took too long or was already used: press Reserve again for a new one.",
  CHALLENGE_REQUIRED: "This concert asks every request for a solved puzzle: reload the page and try again.",
};

/** The words that agree with a number of seats (or standing places). */
function words(seats, standing = false) {
  const noun = standing ? "Standing place" : "Seat";
  return seats > 1 ? { Seats: `${noun}s`, are: "are", them: "them" } : { Seats: noun, are: "is", them: "it" };
}

function holdText(seconds) {
  if (!seconds) return "Seats are yours as soon as your request wins";
  const span = seconds < 120 ? `${seconds} seconds` : `${Math.round(seconds / 60)} minutes`;
  return `Seats are held ${span} for you to confirm`;
}

/** The price categories, when the concert has prices. */
function prices(concert) {
  if (!concert.categories || concert.categories.length === 0) return null;
  return h(
    "ul",
    { class: "legend prices", "aria-label": "Prices" },
    ...concert.categories.map((c) => h("li", { "data-category": c.name }, `${c.name} ${money(c.price, c.currency)}`)),
  );
}

function legend() {
  return h(
    "ul",
    { class: "legend", "aria-label": "Legend" },
    h("li", {}, h("span", { class: "swatch", "data-state": "A" }), "Free"),
    h("li", {}, h("span", { class: "swatch chosen" }), "Your pick"),
    h("li", {}, h("span", { class: "swatch", "data-state": "H" }), "Held"),
    h("li", {}, h("span", { class: "swatch", "data-state": "R" }), "Sold"),
  );
}
