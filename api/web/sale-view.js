// The operator's on-sale view of one concert, live from the API's own
// measurements (requests and decisions per second, the line, decision
// times, seats), with the takings, a refund and the cancel button.

import { api, can } from "./api.js";
import { fill, h, tell, when } from "./dom.js";
import { notPermitted, operatorTabs } from "./admin.js";
import { SeatMap } from "./seatmap.js";
import { cancelConcert, refundForm, takingsTiles } from "./orders.js";
import { locale, t } from "./i18n.js";

const REFRESH_MS = 1000;
const HISTORY = 120;

export async function saleView(main, { params, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "VIEW_SALE", concert)) return;
  const tiles = {};
  const tile = (key, label) => {
    tiles[key] = h("dd", { "data-metric": key }, "…");
    return h("div", { class: "tile" }, h("dt", {}, t(label)), tiles[key]);
  };
  const chart = h("canvas", { width: 720, height: 220, class: "chart", role: "img", "aria-label": t("sale.chartLabel") });
  const history = [];
  const map = new SeatMap(id);
  // A cancelled concert's orders are all given back by the workers.
  const refunds = concert.cancelledAt || !can(concert, "REFUND") ? null : refundForm(concert.id);
  // A cancelled concert is not on sale, and has no seats free to sell.
  const heading = h("h1", {}, t(concert.cancelledAt ? "sale.headingCancelled" : "sale.heading", { title: concert.title }));
  fill(
    main,
    heading,
    h("p", { class: "muted" }, `${concert.venue} · ${when(concert, "concertDate")}`),
    operatorTabs(concert, "sale"),
    h("h2", {}, t("sale.live")),
    // Eight tiles: two rows of four, or four of two on a phone.
    h(
      "dl",
      { class: "tiles", "aria-live": "off" },
      tile("requestsPerSec", "sale.requestsPerSec"),
      tile("lineLength", "sale.inLine"),
      tile("decisionsPerSec", "sale.decisionsPerSec"),
      tile("p99", "sale.p99"),
      tile("sold", "sale.sold"),
      tile("held", "sale.held"),
      concert.cancelledAt ? null : tile("free", "sale.free"),
      tile("p50", "sale.p50"),
    ),
    h(
      "figure",
      {},
      chart,
      h("figcaption", {}, h("span", { class: "key requests" }, t("sale.keyRequests")), " ", h("span", { class: "key decisions" }, t("sale.keyDecisions"))),
    ),
    can(concert, "READ_TAKINGS") ? takingsTiles(id, signal) : null,
    h("h2", {}, t("sale.seats")),
    map.element,
    refunds,
    can(concert, "CANCEL_SHOW") && cancelConcert(concert, signal, {
      onCancelled: () => {
        refunds?.remove();
        fill(heading, t("sale.headingCancelled", { title: concert.title }));
        tiles.free?.parentElement.remove();
        delete tiles.free;
      },
    }),
  );
  const count = new Intl.NumberFormat(locale());
  const rate = new Intl.NumberFormat(locale(), { maximumFractionDigits: 1 });
  const ms = (n) =>
    n >= 1000
      ? new Intl.NumberFormat(locale(), { style: "unit", unit: "second", unitDisplay: "narrow", maximumFractionDigits: 2 }).format(n / 1000)
      : new Intl.NumberFormat(locale(), { style: "unit", unit: "millisecond", unitDisplay: "narrow", maximumFractionDigits: 0 }).format(n);
  const tick = async () => {
    try {
      const sale = await api("GET", `/api/concerts/${id}/sale`, undefined, { signal });
      fill(tiles.requestsPerSec, rate.format(sale.requestsPerSec));
      fill(tiles.lineLength, sale.lineLength === null ? "…" : count.format(sale.lineLength));
      fill(tiles.decisionsPerSec, rate.format(sale.decisionsPerSec));
      fill(tiles.p50, sale.decisionMs ? ms(sale.decisionMs.p50) : "–");
      fill(tiles.p99, sale.decisionMs ? ms(sale.decisionMs.p99) : "–");
      fill(tiles.sold, count.format(sale.seats.reserved));
      fill(tiles.held, count.format(sale.seats.held));
      if (tiles.free) fill(tiles.free, count.format(sale.seats.available));
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

/** 1, 2, 5 × 10^n: the step that gives about four lines up to `top`. */
function niceStep(top) {
  const rough = top / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough);
}

/**
 * The last two minutes, a point a second: requests a solid line, decisions
 * a dashed one (told apart without colour); a per-second scale on the left
 * and the time on the bottom.
 */
function draw(canvas, history) {
  const context = canvas.getContext("2d");
  const { width, height } = canvas;
  const [left, right, top, bottom] = [52, 12, 22, 26];
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  context.clearRect(0, 0, width, height);
  const step = niceStep(Math.max(1, ...history.flat()));
  const max = Math.ceil(Math.max(1, ...history.flat()) / step) * step;
  const x = (i) => left + (i / (HISTORY - 1)) * plotW;
  const y = (v) => top + plotH - (v / max) * plotH;
  const styles = getComputedStyle(canvas);
  const numbers = new Intl.NumberFormat(locale());
  context.font = "12px system-ui, sans-serif";
  context.fillStyle = styles.color;
  context.strokeStyle = "#d9d6e3";
  context.lineWidth = 1;
  context.textAlign = "right";
  context.textBaseline = "middle";
  for (let v = 0; v <= max; v += step) {
    context.beginPath();
    context.moveTo(left, y(v));
    context.lineTo(width - right, y(v));
    context.stroke();
    context.fillText(numbers.format(v), left - 6, y(v));
  }
  context.textAlign = "left";
  context.textBaseline = "alphabetic";
  context.fillText(t("sale.axisPerSecond"), 4, 13);
  context.textAlign = "center";
  context.textBaseline = "top";
  for (const [ago, label] of [[120, t("sale.axisAgo", { count: 2 })], [60, t("sale.axisAgo", { count: 1 })], [0, t("sale.axisNow")]]) {
    const px = x(HISTORY - 1 - ago);
    context.fillText(label, Math.min(Math.max(px, left + 20), width - right - 14), height - bottom + 6);
  }
  [styles.getPropertyValue("--requests"), styles.getPropertyValue("--decisions")].forEach((color, series) => {
    context.beginPath();
    context.strokeStyle = color.trim() || "#333";
    context.lineWidth = 2;
    context.setLineDash(series === 0 ? [] : [6, 4]);
    history.forEach((point, i) => {
      const px = x(HISTORY - history.length + i);
      if (i === 0) context.moveTo(px, y(point[series]));
      else context.lineTo(px, y(point[series]));
    });
    context.stroke();
  });
  context.setLineDash([]);
}
