// A venue's seating plan drawn at its coordinates (SVG): zones named,
// seats coloured by price category, held, sold and picked seats marked;
// zoom (wheel, pinch, + and −) and pan (drag). Tens of thousands of seats
// are a handful of paths, one per category and state, not an element each:
// a 50,000-seat plan paints about as fast as a 10,000-seat grid of buttons.
// A tap is found by position (a grid of cells over the plan); the keyboard
// walks the seats with the arrow keys and a live region names each one.

import { h } from "./dom.js";
import { t } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
/** A seat on a phone, zoomed all the way in, is at least this big (CSS px). */
const TAP_PX = 32;

function svg(tag, attributes = {}) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

export class PlanMap {
  /**
   * `seats`: [{x, y, zone, category}] in the map's order; `zones`: names;
   * `onPick(index)` hears a tap or Enter on a seat; `colours`: the price
   * categories', in order.
   */
  constructor(seats, zones, { onPick, label, colours = [] }) {
    this.colours = colours;
    this.seats = seats;
    this.zones = zones;
    this.onPick = onPick;
    this.label = label;
    this.pitch = pitchOf(seats);
    const half = this.pitch / 2;
    let [minX, minY, maxX, maxY] = [Infinity, Infinity, -Infinity, -Infinity];
    for (const s of seats) {
      minX = Math.min(minX, s.x);
      minY = Math.min(minY, s.y);
      maxX = Math.max(maxX, s.x);
      maxY = Math.max(maxY, s.y);
    }
    // Room for the zones' names above their seats.
    this.bounds = { x: minX - this.pitch, y: minY - 3 * this.pitch, w: maxX - minX + 2 * this.pitch, h: maxY - minY + 4 * this.pitch };
    this.view = { ...this.bounds };
    // As tall as the venue is for the screen's width (within bounds): the
    // first view is the venue's whole width, not a band of it letterboxed.
    this.cells = new Map();
    seats.forEach((s, i) => {
      const key = cellOf(Math.floor(s.x / this.pitch), Math.floor(s.y / this.pitch));
      if (!this.cells.has(key)) this.cells.set(key, []);
      this.cells.get(key).push(i);
    });
    this.layers = new Map();
    this.svg = svg("svg", { class: "plan", "data-seats": seats.length, role: "application", tabindex: "0", "aria-roledescription": t("plan.role"), "aria-label": t("plan.label") });
    this.content = svg("g");
    this.focusRing = svg("rect", { class: "focus-ring", width: this.pitch * 1.1, height: this.pitch * 1.1, rx: half / 2, visibility: "hidden" });
    this.svg.style.aspectRatio = `${this.bounds.w} / ${this.bounds.h}`;
    this.svg.append(this.content);
    for (const [zone, at] of zoneLabels(seats, zones, this.pitch)) {
      const text = svg("text", { class: "zone-label", x: at.x, y: at.y, "font-size": this.pitch * 1.2, "text-anchor": "middle" });
      text.textContent = zone;
      this.content.append(text);
    }
    this.svg.append(this.focusRing);
    this.live = h("p", { class: "visually-hidden", "aria-live": "polite" });
    this.controls = h(
      "div",
      { class: "zoom-controls" },
      h("button", { type: "button", "aria-label": t("plan.zoomIn"), onclick: () => this.zoomFromFront(1.6) }, "+"),
      h("button", { type: "button", "aria-label": t("plan.zoomOut"), onclick: () => this.zoomFromFront(1 / 1.6) }, "−"),
      h("button", { type: "button", "aria-label": t("plan.fitLabel"), onclick: () => this.fit() }, t("plan.fit")),
    );
    // The controls sit above the drawing, never over a seat; the key to
    // the colours is the page's list of prices.
    this.element = h("div", { class: "plan-map" }, this.controls, this.svg, this.live);
    this.listen();
    this.apply();
  }

  /** Draws every seat in its category's colour and state (`stateOf(i)`: A, H, R, M for the viewer's own or P for picked). */
  paint(stateOf) {
    const paths = new Map();
    const size = Math.round(this.pitch * 8) / 10;
    const half = size / 2;
    const square = `h${size}v${size}h${-size}z`;
    this.seats.forEach((s, i) => {
      const state = stateOf(i);
      const key = state === "A" ? `A${s.category ?? 0}` : state;
      let parts = paths.get(key);
      if (!parts) {
        parts = [];
        paths.set(key, parts);
      }
      parts.push(`M${Math.round((s.x - half) * 10) / 10} ${Math.round((s.y - half) * 10) / 10}${square}`);
    });
    for (const [key, layer] of this.layers) {
      if (!paths.has(key)) {
        layer.remove();
        this.layers.delete(key);
      }
    }
    for (const [key, parts] of paths) {
      let layer = this.layers.get(key);
      if (!layer) {
        layer = svg("path", { class: `seats s-${key[0]}`, "data-layer": key });
        if (key[0] === "A") layer.setAttribute("fill", this.colours[Number(key.slice(1))] || "#2e8540");
        this.layers.set(key, layer);
        this.content.append(layer);
      }
      layer.setAttribute("d", parts.join(""));
    }
  }

  /** Shows and names the seat the keyboard is on. */
  focusSeat(index, announce) {
    const s = this.seats[index];
    if (!s) return;
    const half = (this.pitch * 1.1) / 2;
    this.focusRing.setAttribute("x", s.x - half);
    this.focusRing.setAttribute("y", s.y - half);
    this.focusRing.setAttribute("visibility", "visible");
    if (announce) this.live.textContent = this.label(index);
    if (!inside(s, this.view)) {
      this.view.x = s.x - this.view.w / 2;
      this.view.y = s.y - this.view.h / 2;
      this.apply();
    }
  }

  focus() {
    this.svg.focus();
  }

  /** A point of the screen in the plan's units. */
  toPlan(clientX, clientY) {
    const m = this.svg.getScreenCTM();
    return m ? new DOMPoint(clientX, clientY).matrixTransform(m.inverse()) : new DOMPoint(0, 0);
  }

  /** Screen pixels a plan unit takes now. */
  scale() {
    return this.svg.getScreenCTM()?.a || 1;
  }

  /** The seat under a point of the screen, if any. */
  seatAt(clientX, clientY) {
    const { x, y } = this.toPlan(clientX, clientY);
    const [cx, cy] = [Math.floor(x / this.pitch), Math.floor(y / this.pitch)];
    let best = null;
    let bestDistance = (this.pitch * 0.6) ** 2;
    for (let dx = -1; dx <= 1; dx += 1) {
      for (let dy = -1; dy <= 1; dy += 1) {
        for (const i of this.cells.get(cellOf(cx + dx, cy + dy)) || []) {
          const s = this.seats[i];
          const distance = (s.x - x) ** 2 + (s.y - y) ** 2;
          if (distance < bestDistance) {
            best = i;
            bestDistance = distance;
          }
        }
      }
    }
    return best;
  }

  /** Zooms by `factor` around a point of the screen (the centre by default). */
  zoomBy(factor, clientX, clientY) {
    const box = this.svg.getBoundingClientRect();
    const at = clientX === undefined ? this.toPlan(box.left + box.width / 2, box.top + box.height / 2) : this.toPlan(clientX, clientY);
    // Never wider than the whole plan; close enough that a seat is TAP_PX.
    const widest = this.fitted().w;
    const narrowest = Math.min(widest, (this.pitch * Math.max(box.width, 1)) / (TAP_PX * 1.25));
    const w = Math.min(widest, Math.max(narrowest, this.view.w / factor));
    const shrink = w / this.view.w;
    this.view = { x: at.x - (at.x - this.view.x) * shrink, y: at.y - (at.y - this.view.y) * shrink, w, h: this.view.h * shrink };
    this.apply();
  }

  /**
   * Zooms by `factor` keeping the top edge's middle where it is: the stage
   * is at the top, and the row nearest it stays whole in view (zooming on
   * the centre cut the front row in half under the stage).
   */
  zoomFromFront(factor) {
    const box = this.svg.getBoundingClientRect();
    const m = this.svg.getScreenCTM();
    // The plan's top where it is drawn, or the drawing's top edge when the
    // view is scrolled further back than that.
    const planTop = m ? new DOMPoint(0, this.bounds.y).matrixTransform(m).y : box.top;
    this.zoomBy(factor, box.left + box.width / 2, Math.max(box.top, planTop));
  }

  /** The whole plan, widened to the drawing's shape (nothing letterboxed). */
  fitted() {
    const box = this.svg.getBoundingClientRect();
    const { x, y, w, h } = this.bounds;
    if (!box.width || !box.height) return { ...this.bounds };
    const aspect = box.width / box.height;
    return w / h > aspect
      ? { x, y: y - (w / aspect - h) / 2, w, h: w / aspect }
      : { x: x - (h * aspect - w) / 2, y, w: h * aspect, h };
  }

  fit() {
    this.view = this.fitted();
    this.apply();
  }

  apply() {
    const { x, y, w, h } = this.view;
    this.svg.setAttribute("viewBox", `${x} ${y} ${w} ${h}`);
    this.svg.dataset.zoom = (this.fitted().w / w).toFixed(2);
    this.svg.dataset.seatPx = String(Math.round(this.pitch * this.scale()));
  }

  listen() {
    const pointers = new Map();
    let moved = 0;
    let pinch = null;
    this.svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      this.zoomBy(e.deltaY < 0 ? 1.25 : 0.8, e.clientX, e.clientY);
    }, { passive: false });
    this.svg.addEventListener("pointerdown", (e) => {
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      moved = 0;
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        pinch = Math.hypot(a.x - b.x, a.y - b.y);
      }
    });
    this.svg.addEventListener("pointermove", (e) => {
      const last = pointers.get(e.pointerId);
      if (!last) return;
      const [dx, dy] = [e.clientX - last.x, e.clientY - last.y];
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      moved += Math.abs(dx) + Math.abs(dy);
      if (pointers.size === 2 && pinch) {
        const [a, b] = [...pointers.values()];
        const now = Math.hypot(a.x - b.x, a.y - b.y);
        this.zoomBy(now / pinch, (a.x + b.x) / 2, (a.y + b.y) / 2);
        pinch = now;
      } else if (pointers.size === 1 && moved > 4) {
        const scale = this.scale();
        this.view.x -= dx / scale;
        this.view.y -= dy / scale;
        this.apply();
      }
    });
    const up = (e) => {
      pointers.delete(e.pointerId);
      if (pointers.size < 2) pinch = null;
    };
    this.svg.addEventListener("pointerup", up);
    this.svg.addEventListener("pointercancel", up);
    // A drag is not a tap.
    this.svg.addEventListener("click", (e) => {
      if (moved > 4) return;
      const index = this.seatAt(e.clientX, e.clientY);
      if (index !== null) this.onPick(index);
    });
  }
}

/** The usual distance between neighbours in a row: what a seat's size follows. */
function pitchOf(seats) {
  const gaps = [];
  for (let i = 1; i < seats.length && gaps.length < 2000; i += 1) {
    const [a, b] = [seats[i - 1], seats[i]];
    const gap = Math.hypot(b.x - a.x, b.y - a.y);
    if (gap > 0) gaps.push(gap);
  }
  if (gaps.length === 0) return 20;
  gaps.sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)];
}

/** A cell of the grid over the plan, as one number. */
function cellOf(cx, cy) {
  return cx * 1048576 + cy;
}

function inside(s, view) {
  return s.x >= view.x && s.x <= view.x + view.w && s.y >= view.y && s.y <= view.y + view.h;
}

/** Each zone's name, centred above its seats. */
function zoneLabels(seats, zones, pitch) {
  const boxes = new Map();
  for (const s of seats) {
    const name = zones[s.zone];
    if (!name) continue;
    const box = boxes.get(name) || { minX: Infinity, maxX: -Infinity, minY: Infinity };
    box.minX = Math.min(box.minX, s.x);
    box.maxX = Math.max(box.maxX, s.x);
    box.minY = Math.min(box.minY, s.y);
    boxes.set(name, box);
  }
  return [...boxes].map(([name, b]) => [name, { x: (b.minX + b.maxX) / 2, y: b.minY - pitch * 1.2 }]);
}
