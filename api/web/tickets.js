// One's own tickets: every confirmed seat's QR code, large enough to be
// scanned from a phone held up at the door.

import { api, bearer, currentUser } from "./api.js";
import { clockAt, fill, h, placeName, when } from "./dom.js";
import { t, tNodes } from "./i18n.js";

export async function ticketsView(main, { signal }) {
  if (!currentUser()) {
    location.hash = "#/login?next=%23%2Fme%2Ftickets";
    return;
  }
  const reservations = await api("GET", "/api/users/me/reservations?page=0&size=100", undefined, { signal });
  const confirmed = reservations.filter((r) => r.status === "CONFIRMED");
  const concerts = new Map();
  const cards = [];
  for (const r of confirmed) {
    if (!concerts.has(r.concertId)) {
      const concert = await api("GET", `/api/concerts/${r.concertId}`, undefined, { signal }).catch(() => null);
      concerts.set(r.concertId, concert);
    }
    const tickets = await api("GET", `/api/reservations/${r.reservationId}/tickets`, undefined, { signal });
    for (const ticket of tickets) cards.push(card(concerts.get(r.concertId), r.concertId, ticket, signal));
  }
  fill(
    main,
    h("h1", {}, t("title.tickets")),
    cards.length
      ? h("ul", { class: "tickets" }, cards)
      : h("p", { class: "muted" }, tNodes("tickets.none", { find: h("a", { href: "#/" }, t("tickets.findConcert")) })),
  );
}

/**
 * One order's tickets, to print: its fan's, or an order the desk sold
 * (the server lets staff who find orders read them).
 */
export async function orderTicketsView(main, { params, signal }) {
  const id = Number(params.id);
  const order = await api("GET", `/api/reservations/${id}`, undefined, { signal });
  const concert = await api("GET", `/api/concerts/${order.concertId}`, undefined, { signal }).catch(() => null);
  const tickets = await api("GET", `/api/reservations/${id}/tickets`, undefined, { signal });
  fill(
    main,
    h("h1", {}, t("tickets.ofOrder", { order: String(id) })),
    h("p", {}, h("button", { type: "button", class: "primary", onclick: () => window.print() }, t("tickets.print"))),
    h("ul", { class: "tickets" }, tickets.map((ticket) => card(concert, order.concertId, ticket, signal))),
  );
}

function card(concert, concertId, ticket, signal) {
  const image = h("img", { class: "qr", alt: t("tickets.qrAlt", { seat: placeName(ticket) }), width: 240, height: 240 });
  qrInto(image, ticket.qr, signal);
  // A ticket used at the door is a record, not a pass: its code greyed.
  const used = ticket.checkedInAt
    ? h("p", { class: "status used" }, t(ticket.gate ? "tickets.usedAtGate" : "tickets.usedAtDoor", { gate: ticket.gate, time: clockAt(ticket.checkedInAt, concert?.timeZone) }))
    : h("p", { class: "muted" }, t("tickets.showAtDoor"));
  return h(
    "li",
    { class: ticket.checkedInAt ? "ticket used" : "ticket", "data-ticket": ticket.ticketId },
    h("p", { class: "ticket-concert" }, concert ? `${concert.title} · ${concert.venue}` : t("reservations.concert", { id: String(concertId) })),
    concert ? h("p", { class: "ticket-when" }, when(concert, "concertDate")) : null,
    h("p", { class: "ticket-seat" }, seatTitle(ticket), ticket.category ? ` · ${ticket.category}` : ""),
    image,
    used,
    h("code", { class: "ticket-code" }, ticket.code),
  );
}

/** The QR image needs the bearer token: fetched, then shown as data. */
async function qrInto(image, path, signal) {
  try {
    const response = await fetch(path, { headers: { Authorization: `Bearer ${bearer()}` }, signal });
    if (!response.ok) return;
    const svg = await response.text();
    image.src = `data:image/svg+xml;base64,${btoa(svg)}`;
  } catch {
    // The code below the image is the ticket too.
  }
}

/** "Seat A1" on a grid; a plan's seat or a standing place as its venue names it. */
function seatTitle(ticket) {
  const name = placeName(ticket);
  return name === ticket.seatNumber ? t("seatmap.seat", { seat: name }) : name;
}
