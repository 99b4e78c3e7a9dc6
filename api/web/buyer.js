// The buyer's pages: sign up and log in, the concerts, a concert's seat map
// with its checkout (the request in line, then the hold and its confirm, or
// "taken by someone faster"), and one's own reservations.

import { Problem, api, currentUser, isAdmin, logIn, signUp } from "./api.js";
import { clock, countdown, field, fill, h, quiet, roughly, tell, when } from "./dom.js";
import { follow } from "./events.js";
import { SeatMap } from "./seatmap.js";

/** Where a concert's sale stands at `now`: before its requests, in its lottery, or open. */
export function saleState(concert, now = Date.now()) {
  if (!concert.opensAt) return { phase: "open" };
  const opens = new Date(concert.opensAt).getTime();
  const from = opens - (concert.lotteryWindowSeconds || 0) * 1000;
  if (now >= opens) return { phase: "open" };
  if (now >= from) return { phase: "lottery", opens };
  return { phase: "soon", opens, from, lottery: concert.lotteryWindowSeconds > 0 };
}

function saleLabel(concert) {
  const state = saleState(concert);
  if (state.phase === "open") return "On sale";
  if (state.phase === "lottery") return `Lottery open · sale opens ${when(concert.opensAt)}`;
  return `Sale opens ${when(concert.opensAt)}`;
}

export async function concertsView(main, { signal, query }) {
  const page = Math.max(0, Number(query.get("page") || 0));
  const list = await api("GET", `/api/concerts?page=${page}&size=20`, undefined, { signal });
  const items = list.content.map((c) =>
    h(
      "li",
      { class: "card" },
      h("h2", {}, h("a", { href: `#/concerts/${c.id}` }, c.title)),
      h("p", {}, `${c.venue} · ${when(c.concertDate)}`),
      h("p", { class: "muted" }, `${c.seatCount} seats · ${saleLabel(c)}`),
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
    page > 0 ? h("a", { href: `#/?page=${page - 1}` }, "← Newer") : null,
    page + 1 < list.totalPages ? h("a", { href: `#/?page=${page + 1}` }, "Older →") : null,
  );
  fill(
    main,
    h("h1", {}, "Concerts"),
    isAdmin() ? h("p", {}, h("a", { class: "button", href: "#/admin/concerts/new" }, "New concert")) : null,
    items.length ? h("ul", { class: "cards" }, items) : h("p", { class: "muted" }, "No concerts yet."),
    pager,
  );
}

function accountForm(main, { heading, submit, action, other }) {
  const nick = h("input", { name: "nickName", autocomplete: "username", required: true, maxlength: 50 });
  const password = h("input", {
    name: "password",
    type: "password",
    autocomplete: heading === "Sign up" ? "new-password" : "current-password",
    required: true,
  });
  const errors = h("div", { class: "form-errors", "aria-live": "polite" });
  const form = h(
    "form",
    {
      class: "narrow",
      onsubmit: async (event) => {
        event.preventDefault();
        fill(errors);
        const button = form.querySelector("button");
        button.disabled = true;
        try {
          await action(nick.value.trim(), password.value);
          quiet();
          const next = new URLSearchParams(location.hash.split("?")[1] || "").get("next");
          location.hash = next && next.startsWith("#/") ? next : "#/";
        } catch (e) {
          const fields = e instanceof Problem ? e.fields() : {};
          const messages = Object.entries(fields).map(([name, message]) => `${name === "nickName" ? "Nickname" : "Password"}: ${message}`);
          fill(errors, h("p", { class: "error", role: "alert" }, e.message), messages.map((m) => h("p", { class: "error" }, m)));
          button.disabled = false;
        }
      },
    },
    h("h1", {}, heading),
    field("Nickname", nick),
    field("Password", password),
    errors,
    h("button", { type: "submit" }, submit),
    h("p", { class: "muted" }, other),
  );
  fill(main, form);
  nick.focus();
}

export function loginView(main) {
  accountForm(main, {
    heading: "Log in",
    submit: "Log in",
    action: logIn,
    other: ["No account yet? ", h("a", { href: "#/signup" }, "Sign up")],
  });
}

export function signupView(main) {
  accountForm(main, {
    heading: "Sign up",
    submit: "Create account",
    action: signUp,
    other: ["Already have an account? ", h("a", { href: "#/login" }, "Log in")],
  });
}

export async function concertView(main, { signal, params }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  const counts = h("p", { class: "counts", "aria-live": "off" });
  const choice = h("p", { class: "choice", id: "choice" }, "Pick a seat on the map.");
  const reserve = h("button", { type: "button", class: "primary", disabled: true, "aria-describedby": "choice" }, "Reserve");
  const sale = h("div", { class: "sale-state" });
  const line = h("section", { class: "line", "aria-live": "polite", "aria-label": "Your request" });
  const map = new SeatMap(id, {
    selectable: true,
    max: concert.maxSeatsPerOrder,
    onChange: (ids) => {
      const numbers = map.selectedNumbers();
      fill(choice, ids.length ? `Selected: ${numbers.join(", ")}` : "Pick a seat on the map.");
      reserve.disabled = ids.length === 0 || saleState(concert).phase === "soon" || busy;
    },
    onCounts: (c) => fill(counts, h("span", { class: "free" }, `${c.available} free`), " · ", h("span", { class: "held" }, `${c.held} held`), " · ", h("span", { class: "sold" }, `${c.sold} sold`)),
  });
  map.element.addEventListener("seatmap-message", (e) => tell(e.detail, "info"));
  let busy = false;

  const showSale = () => {
    const state = saleState(concert);
    if (state.phase === "open") {
      fill(sale, h("p", { class: "badge open" }, "On sale now"));
    } else if (state.phase === "lottery") {
      const left = h("strong", { class: "countdown" });
      fill(sale, h("p", { class: "badge lottery" }, "Lottery open"), h("p", {}, "Requests made before the opening are put in a random order when the sale opens: there is no use in being first. The sale opens in ", left, "."));
      countdown(left, state.opens, clock, showSale);
    } else {
      const left = h("strong", { class: "countdown" });
      const until = state.lottery ? state.from : state.opens;
      fill(
        sale,
        h("p", { class: "badge soon" }, "Not on sale yet"),
        h("p", {}, state.lottery ? "The lottery opens in " : "The sale opens in ", left, state.lottery ? `; the sale opens ${when(concert.opensAt)}.` : "."),
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

  const showReservation = (reservation) => {
    const seats = reservation.seats.map((s) => s.seatNumber).join(", ");
    const w = words(reservation.seats.length);
    map.clear();
    map.refresh().catch(() => {});
    if (reservation.status === "CONFIRMED") {
      line.className = "line confirmed";
      fill(line, h("h2", {}, "Confirmed"), h("p", {}, `${w.Seats} ${seats} ${w.are} yours. `, h("a", { href: "#/me/reservations" }, "My reservations")));
      return;
    }
    if (reservation.status !== "HELD") {
      line.className = "line failed";
      fill(line, h("h2", {}, `Reservation ${reservation.status.toLowerCase()}`), h("p", {}, `${w.Seats} ${seats}.`));
      return;
    }
    const left = h("strong", { class: "countdown hold-countdown" });
    const confirm = h("button", { type: "button", class: "primary" }, "Confirm");
    const cancel = h("button", { type: "button" }, `Release ${w.Seats.toLowerCase()}`);
    line.className = "line held";
    fill(line, h("h2", {}, "Seats held for you"), h("p", {}, `${w.Seats} ${seats} ${w.are} yours for `, left, ` more: confirm to keep ${w.them}.`), h("p", { class: "actions" }, confirm, cancel));
    const stop = countdown(left, reservation.holdExpiresAt, clock, () => {
      line.className = "line failed";
      fill(line, h("h2", {}, "Your hold ended"), h("p", {}, `${w.Seats} ${seats} went back on sale.`));
      map.refresh().catch(() => {});
    });
    confirm.addEventListener("click", async () => {
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
    confirm.focus();
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

  reserve.addEventListener("click", async () => {
    if (!currentUser()) {
      location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
      return;
    }
    const ids = map.selected();
    if (ids.length === 0) return;
    quiet();
    reserve.disabled = true;
    try {
      const accepted = await api("POST", "/api/reservations", ids.length === 1 ? { seatId: ids[0] } : { seatIds: ids });
      await followRequest(accepted.queueId);
    } catch (e) {
      if (e instanceof Problem && e.code === "QUEUE_DUPLICATED" && e.body.queueId) {
        // A second click: follow the request already in line.
        await followRequest(e.body.queueId);
        return;
      }
      tell(e.message);
      reserve.disabled = false;
    }
  });

  fill(
    main,
    h(
      "div",
      { class: "concert-head" },
      h("h1", {}, concert.title),
      h("p", {}, `${concert.venue} · ${when(concert.concertDate)}`),
      h("p", { class: "muted" }, `${holdText(concert.holdSeconds)} · up to ${concert.maxSeatsPerOrder} seats per order`),
    ),
    sale,
    h(
      "div",
      { class: "concert-body" },
      h("div", { class: "map-wrap" }, h("div", { class: "stage", "aria-hidden": "true" }, "Stage"), map.element, legend()),
      h("aside", { class: "checkout", "aria-label": "Checkout" }, counts, choice, reserve, line),
    ),
  );
  showSale();
  await map.load();
  map.start();
}

/** The words that agree with a number of seats. */
function words(seats) {
  return seats > 1 ? { Seats: "Seats", are: "are", them: "them" } : { Seats: "Seat", are: "is", them: "it" };
}

function holdText(seconds) {
  if (!seconds) return "Seats are yours as soon as your request wins";
  const span = seconds < 120 ? `${seconds} seconds` : `${Math.round(seconds / 60)} minutes`;
  return `Seats are held ${span} for you to confirm`;
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

export async function reservationsView(main, { signal }) {
  if (!currentUser()) {
    location.hash = "#/login?next=%23%2Fme%2Freservations";
    return;
  }
  const list = await api("GET", "/api/users/me/reservations?page=0&size=100", undefined, { signal });
  const titles = new Map();
  await Promise.all(
    [...new Set(list.map((r) => r.concertId))].map(async (id) => {
      try {
        titles.set(id, (await api("GET", `/api/concerts/${id}`, undefined, { signal })).title);
      } catch {
        titles.set(id, `Concert ${id}`);
      }
    }),
  );
  const rows = list.map((r) => {
    const actions = h("td", { class: "actions" });
    const state = h("td", {}, h("span", { class: `status ${r.status.toLowerCase()}` }, r.status.toLowerCase()));
    if (r.status === "HELD") {
      const left = h("span", { class: "countdown" });
      state.append(" ", left);
      countdown(left, r.holdExpiresAt, (ms) => `(${clock(ms)} left)`, () => reservationsView(main, { signal }));
      actions.append(act("Confirm", () => api("POST", `/api/reservations/${r.reservationId}/confirm`, {})));
    }
    if (r.status === "HELD" || r.status === "CONFIRMED") {
      actions.append(act("Cancel", () => api("POST", `/api/reservations/${r.reservationId}/cancel`, {})));
    }
    return h("tr", {}, h("td", {}, h("a", { href: `#/concerts/${r.concertId}` }, titles.get(r.concertId))), h("td", {}, r.seats.map((s) => s.seatNumber).join(", ")), state, actions);
  });
  function act(label, call) {
    return h("button", {
      type: "button",
      onclick: async (event) => {
        event.target.disabled = true;
        try {
          await call();
          quiet();
          await reservationsView(main, { signal });
        } catch (e) {
          tell(e.message);
          event.target.disabled = false;
        }
      },
    }, label);
  }
  fill(
    main,
    h("h1", {}, "My reservations"),
    rows.length
      ? h("table", { class: "table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Concert"), h("th", { scope: "col" }, "Seats"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Actions"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No reservations yet: ", h("a", { href: "#/" }, "find a concert"), "."),
  );
}
