// The operator's pages (admins): create, edit and delete concerts, and the
// on-sale view of one concert, live from the API's own measurements
// (requests and decisions per second, the line, decision times, seats).

import { Problem, api, isAdmin } from "./api.js";
import { field, fill, fromLocalInput, h, tell, toLocalInput, when } from "./dom.js";
import { SeatMap } from "./seatmap.js";

const REFRESH_MS = 1000;
const HISTORY = 120;

function adminOnly(main) {
  if (isAdmin()) return false;
  fill(main, h("h1", {}, "Operators only"), h("p", {}, "This page is for the box office's operators. ", h("a", { href: "#/login" }, "Log in"), " with an operator account."));
  return true;
}

const FIELDS = [
  { name: "title", label: "Title", type: "text", required: true },
  { name: "venue", label: "Venue", type: "text", required: true },
  { name: "concertDate", label: "Concert date and time", type: "datetime-local", required: true },
  { name: "rows", label: "Rows", type: "number", min: 1, max: 100000, value: 10, createOnly: true },
  { name: "seatsPerRow", label: "Seats per row", type: "number", min: 1, max: 100000, value: 20, createOnly: true },
  { name: "holdSeconds", label: "Hold seconds (0: confirmed at once)", type: "number", min: 0, max: 3600, value: 0 },
  { name: "maxSeatsPerOrder", label: "Seats per order", type: "number", min: 1, max: 10, value: 4 },
  { name: "opensAt", label: "Sale opens (empty: on sale at once)", type: "datetime-local" },
  { name: "lotteryWindowSeconds", label: "Lottery window, seconds before the opening", type: "number", min: 0, max: 86400, value: 0 },
];

function concertForm(main, { heading, concert, submit, send, extra }) {
  const inputs = {};
  const errors = {};
  const body = h("div");
  const problems = h("div", { class: "form-errors", "aria-live": "polite" });
  const render = () =>
    fill(
      body,
      FIELDS.filter((f) => !(concert && f.createOnly)).map((f) => {
        const input = inputs[f.name] || h("input", { name: f.name, type: f.type, min: f.min, max: f.max, required: f.required, step: f.type === "number" ? 1 : undefined });
        if (!inputs[f.name]) {
          inputs[f.name] = input;
          const current = concert ? concert[f.name] : f.value;
          input.value = f.type === "datetime-local" ? toLocalInput(current) : current ?? "";
        }
        return field(f.label, input, errors[f.name]);
      }),
    );
  const form = h(
    "form",
    {
      class: "narrow concert-form",
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        const values = {};
        for (const [name, input] of Object.entries(inputs)) {
          const spec = FIELDS.find((f) => f.name === name);
          if (spec.type === "number") values[name] = input.value === "" ? null : Number(input.value);
          else if (spec.type === "datetime-local") values[name] = fromLocalInput(input.value);
          else values[name] = input.value.trim();
        }
        for (const key of Object.keys(errors)) delete errors[key];
        fill(problems);
        try {
          await send(values);
        } catch (e) {
          if (e instanceof Problem) Object.assign(errors, e.fields());
          render();
          fill(problems, h("p", { class: "error", role: "alert" }, e.message));
        }
      },
    },
    h("h1", {}, heading),
    body,
    problems,
    h("p", { class: "actions" }, h("button", { type: "submit", class: "primary" }, submit), extra),
  );
  render();
  fill(main, form);
  inputs.title.focus();
}

export function newConcertView(main) {
  if (adminOnly(main)) return;
  concertForm(main, {
    heading: "New concert",
    submit: "Create concert",
    send: async (values) => {
      const body = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null && v !== ""));
      const created = await api("POST", "/api/concerts", body);
      location.hash = `#/admin/concerts/${created.id}/sale`;
    },
  });
}

export async function editConcertView(main, { params, signal }) {
  if (adminOnly(main)) return;
  const concert = await api("GET", `/api/concerts/${params.id}`, undefined, { signal });
  let armed = false;
  const remove = h("button", {
    type: "button",
    class: "danger",
    onclick: async () => {
      if (!armed) {
        armed = true;
        fill(remove, "Really delete this concert?");
        return;
      }
      try {
        await api("DELETE", `/api/concerts/${concert.id}`);
        tell(`“${concert.title}” was deleted.`, "info", { acrossNavigation: true });
        location.hash = "#/";
      } catch (e) {
        tell(e.message);
        armed = false;
        fill(remove, "Delete concert");
      }
    },
  }, "Delete concert");
  concertForm(main, {
    heading: `Edit “${concert.title}”`,
    concert,
    submit: "Save changes",
    extra: [h("a", { href: `#/admin/concerts/${concert.id}/sale` }, "On-sale view"), remove],
    send: async (values) => {
      await api("PATCH", `/api/concerts/${concert.id}`, values);
      tell("Saved.", "info", { acrossNavigation: true });
      location.hash = `#/admin/concerts/${concert.id}/sale`;
    },
  });
}

export async function saleView(main, { params, signal }) {
  if (adminOnly(main)) return;
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  const tiles = {};
  const tile = (key, label) => {
    tiles[key] = h("dd", { "data-metric": key }, "…");
    return h("div", { class: "tile" }, h("dt", {}, label), tiles[key]);
  };
  const chart = h("canvas", { width: 640, height: 160, class: "chart", role: "img", "aria-label": "Requests and decisions per second over the last two minutes" });
  const history = [];
  const map = new SeatMap(id);
  fill(
    main,
    h("h1", {}, `On sale: ${concert.title}`),
    h("p", { class: "muted" }, `${concert.venue} · ${when(concert.concertDate)} · `, h("a", { href: `#/admin/concerts/${id}/edit` }, "Edit"), " · ", h("a", { href: `#/concerts/${id}` }, "Buyer's page")),
    h(
      "dl",
      { class: "tiles", "aria-live": "off" },
      tile("requestsPerSec", "Requests/s"),
      tile("lineLength", "In line"),
      tile("decisionsPerSec", "Decisions/s"),
      tile("p50", "Decision p50"),
      tile("p99", "Decision p99"),
      tile("sold", "Sold"),
      tile("held", "Held"),
      tile("free", "Free"),
    ),
    h("figure", {}, chart, h("figcaption", {}, h("span", { class: "key requests" }, "requests/s"), " ", h("span", { class: "key decisions" }, "decisions/s"))),
    h("h2", {}, "Seats"),
    map.element,
  );
  const rate = (n) => (n >= 100 ? Math.round(n).toLocaleString() : n.toFixed(1));
  const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${Math.round(n)} ms`);
  const tick = async () => {
    try {
      const sale = await api("GET", `/api/concerts/${id}/sale`, undefined, { signal });
      fill(tiles.requestsPerSec, rate(sale.requestsPerSec));
      fill(tiles.lineLength, sale.lineLength === null ? "…" : sale.lineLength.toLocaleString());
      fill(tiles.decisionsPerSec, rate(sale.decisionsPerSec));
      fill(tiles.p50, sale.decisionMs ? ms(sale.decisionMs.p50) : "–");
      fill(tiles.p99, sale.decisionMs ? ms(sale.decisionMs.p99) : "–");
      fill(tiles.sold, sale.seats.reserved.toLocaleString());
      fill(tiles.held, sale.seats.held.toLocaleString());
      fill(tiles.free, sale.seats.available.toLocaleString());
      history.push([sale.requestsPerSec, sale.decisionsPerSec]);
      if (history.length > HISTORY) history.shift();
      draw(chart, history);
    } catch (e) {
      if (e.name === "AbortError") return;
      tell(e.message);
    }
    if (!signal.aborted) setTimeout(tick, REFRESH_MS);
  };
  await tick();
  await map.load();
  map.start();
}

function draw(canvas, history) {
  const context = canvas.getContext("2d");
  const { width, height } = canvas;
  context.clearRect(0, 0, width, height);
  const top = Math.max(1, ...history.flat());
  const x = (i) => (i / (HISTORY - 1)) * width;
  const y = (v) => height - 4 - (v / top) * (height - 8);
  const styles = getComputedStyle(canvas);
  [styles.getPropertyValue("--requests"), styles.getPropertyValue("--decisions")].forEach((color, series) => {
    context.beginPath();
    context.strokeStyle = color.trim() || "#333";
    context.lineWidth = 2;
    history.forEach((point, i) => {
      const px = x(HISTORY - history.length + i);
      if (i === 0) context.moveTo(px, y(point[series]));
      else context.lineTo(px, y(point[series]));
    });
    context.stroke();
  });
  context.fillStyle = styles.color;
  context.font = "12px system-ui, sans-serif";
  context.fillText(`${Math.round(top)}/s`, 4, 14);
}
