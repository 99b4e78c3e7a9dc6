// One's own reservations: seats, state, a hold's time left, confirm and cancel.

import { api, currentUser } from "./api.js";
import { clock, countdown, fill, h, quiet, tell } from "./dom.js";

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
    // A ticket used at the door is not given back; anything else is
    // cancelled only once the fan has said so twice.
    if ((r.status === "HELD" || r.status === "CONFIRMED") && !r.checkedIn) {
      actions.append(cancel(r));
    }
    if (r.checkedIn) actions.append(h("span", { class: "muted" }, "Used at the door"));
    return h("tr", {}, h("td", {}, h("a", { href: `#/concerts/${r.concertId}` }, titles.get(r.concertId))), h("td", {}, r.seats.map((s) => s.seatNumber).join(", ")), state, actions);
  });
  function cancel(r) {
    const seats = r.seats.map((s) => s.seatNumber).join(", ");
    const ask = h("button", { type: "button", class: "cancel" }, "Cancel");
    const question = h("span", { class: "confirm-cancel", hidden: true }, `Cancel ${seats}? They go back on sale. `);
    const keep = h("button", { type: "button" }, "Keep them");
    question.append(act("Yes, cancel", () => api("POST", `/api/reservations/${r.reservationId}/cancel`, {})), " ", keep);
    ask.addEventListener("click", () => {
      ask.hidden = true;
      question.hidden = false;
      keep.focus();
    });
    keep.addEventListener("click", () => {
      question.hidden = true;
      ask.hidden = false;
      ask.focus();
    });
    return h("span", {}, ask, question);
  }
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
