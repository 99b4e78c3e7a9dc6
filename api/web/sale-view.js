// The operator's on-sale view of one concert, live from the API's own
// measurements (requests and decisions per second, the line, decision
// times, seats).

import { api } from "./api.js";
import { fill, h, tell, when } from "./dom.js";
import { adminOnly } from "./admin.js";
import { SeatMap } from "./seatmap.js";
import { cancelConcert, refundForm, takingsTiles } from "./orders.js";

const REFRESH_MS = 1000;
const HISTORY = 120;

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
  // A cancelled concert's orders are all given back by the workers.
  const refunds = concert.cancelledAt ? null : refundForm();
  fill(
    main,
    h("h1", {}, `On sale: ${concert.title}`),
    h("p", { class: "muted" }, `${concert.venue} · ${when(concert, "concertDate")} · `, h("a", { href: `#/admin/concerts/${id}/edit` }, "Edit"), " · ", h("a", { href: `#/concerts/${id}` }, "Buyer's page")),
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
    takingsTiles(id, signal),
    h("h2", {}, "Seats"),
    map.element,
    refunds,
    cancelConcert(concert, signal, { onCancelled: () => refunds?.remove() }),
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
