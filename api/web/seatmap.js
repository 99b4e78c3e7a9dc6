// A concert's seat map: rows × seats as a grid of buttons (a venue's plan
// drawn at its coordinates instead, see plan-map.js), each coloured by
// its state from the availability endpoint (one letter per seat), refreshed
// every second with If-None-Match so that an unchanged map costs a 304.
// The layout (seat numbers) is read once from the seat-map endpoint; seats are
// named for screen readers ("Row A, seat 12, available") and the grid is
// one tab stop, walked with the arrow keys. Long because it is one
// widget whose halves share every field: the seats as read and as drawn
// (grid or plan), picked, one's own, and walked by the keyboard.

import { api } from "./api.js";
import { h, fill } from "./dom.js";
import { money, totalOf } from "./money.js";
import { t } from "./i18n.js";
import { colourOf } from "./palette.js";

const STATE_NAMES = { A: "seatmap.available", H: "seatmap.held", R: "seatmap.sold", M: "seatmap.yours" };

/** "Row A, seat 12, available" (or "selected"). */
function stateOf(name, state, chosen) {
  return t("seatmap.nameState", { name, state: t(chosen ? "seatmap.selected" : STATE_NAMES[state]) });
}
const REFRESH_MS = 1000;
/** plan-map.js, loaded for the first concert seated from a plan. */
let PlanMap = null;
const GAP_LIMIT = 4;
/** How old the server's layout may be (its `max-age`). */
const LAYOUT_FRESH_MS = 5000;

export class SeatMap {
  /**
   * `selectable`: seats can be picked (up to `max`); `onChange(ids)` hears
   * the selection; `onCounts(counts)` the free/held/sold counts (and the free seats of each category and places of each area).
   */
  constructor(concertId, { selectable = false, max = 1, onChange = () => {}, onCounts = () => {}, onTaken = () => {} } = {}) {
    this.concertId = concertId;
    this.selectable = selectable;
    this.max = max;
    this.onChange = onChange;
    this.onCounts = onCounts;
    // Picked seats that someone else took meanwhile (their numbers): they
    // leave the selection, and the page says so.
    this.onTaken = onTaken;
    this.seats = []; // {id, number, row, label, button, state, r, c}
    this.byId = new Map();
    this.rows = []; // arrays of seat indexes
    this.chosen = new Set();
    // The viewer's own held or bought seats, told apart from anyone's.
    this.mine = new Set();
    this.etag = null;
    this.states = null;
    this.notModified = 0;
    this.focus = 0;
    this.element = h("div", {
      class: "seatmap",
      role: "group",
      "aria-label": t("seatmap.label"),
      onkeydown: (e) => this.key(e),
      onclick: (e) => this.click(e),
    });
    this.timer = null;
  }

  /** Reads the layout and the states, draws the map; resolves when usable. */
  async load() {
    await this.readLayout();
    await this.refresh();
    performance.mark("seatmap-ready");
    this.element.dataset.ready = "true";
  }

  start() {
    this.stop();
    const tick = async () => {
      if (!this.element.isConnected) return;
      if (!document.hidden) {
        try {
          await this.refresh();
        } catch {
          // The next second tries again; the map shows the last known states.
        }
      }
      this.timer = setTimeout(tick, REFRESH_MS);
    };
    this.timer = setTimeout(tick, REFRESH_MS);
  }

  stop() {
    clearTimeout(this.timer);
  }

  /** The seats in natural order with their numbers: one cached answer. */
  async readLayout() {
    const layout = await api("GET", `/api/concerts/${this.concertId}/seat-map`);
    const seats = [];
    const categories = layout.categories || [];
    this.categories = categories;
    const drawn = (layout.seatX || []).length === layout.seatNumbers.length && layout.seatNumbers.length > 0;
    let i = 0;
    for (const [first, count] of layout.idRanges) {
      for (let k = 0; k < count; k += 1) {
        const position = (layout.seatCategories || [])[i];
        const category = categories[position] || null;
        const seat = { id: first + k, seatNumber: layout.seatNumbers[i], category, categoryIndex: position };
        if (drawn) Object.assign(seat, { x: layout.seatX[i], y: layout.seatY[i], zone: layout.seatZones[i] });
        seats.push(seat);
        i += 1;
      }
    }
    this.layoutReadAt = Date.now();
    performance.mark("seatmap-layout-read");
    if (drawn && !PlanMap) ({ PlanMap } = await import("./plan-map.js"));
    if (drawn) this.drawPlan(seats, layout.zones || []);
    else this.draw(seats);
    performance.mark("seatmap-drawn");
  }

  /** A venue's plan: seats at their coordinates, one tab stop (plan-map.js). */
  drawPlan(list, zones) {
    this.seats = [];
    this.byId = new Map();
    this.rows = [];
    let rowLabel = null;
    let rowSeats = null;
    let where = "";
    const priced = new Map();
    for (const seat of list) {
      // zone-row-seat, or row-seat with one zone.
      const cut = seat.seatNumber.lastIndexOf("-");
      const label = cut > 0 ? seat.seatNumber.slice(0, cut) : t("seatmap.otherRow");
      if (label !== rowLabel) {
        rowLabel = label;
        rowSeats = [];
        this.rows.push(rowSeats);
        const zoneCut = label.lastIndexOf("-");
        where = zoneCut > 0 ? t("seatmap.zoneRow", { zone: label.slice(0, zoneCut), row: label.slice(zoneCut + 1) }) : t("seatmap.row", { row: label });
      }
      const category = seat.category;
      if (category && !priced.has(category)) priced.set(category, t("seatmap.priced", { category: category.name, price: money(category.price, category.currency) }));
      // Named when read (a screen reader, a message): most never are.
      const entry = {
        id: seat.id,
        number: seat.seatNumber,
        where,
        price: category ? priced.get(category) : "",
        // As the venue names it ("Stalls, row 4, seat 6"), never by its code.
        get label() {
          const seatNo = cut > 0 ? this.number.slice(this.number.lastIndexOf("-") + 1) : null;
          return seatNo ? t("seatmap.whereSeat", { where: this.where, seat: seatNo }) : this.number;
        },
        get name() {
          return (this.label === this.number ? t("seatmap.seat", { seat: this.number }) : this.label) + this.price;
        },
        category,
        button: null,
        state: "A",
        r: this.rows.length - 1,
        c: rowSeats.length,
      };
      rowSeats.push(this.seats.length);
      this.seats.push(entry);
      this.byId.set(seat.id, entry);
    }
    const points = list.map((s) => ({ x: s.x, y: s.y, zone: s.zone, category: s.categoryIndex }));
    this.plan = new PlanMap(points, zones, {
      colours: (this.categories || []).map(colourOf),
      onPick: (index) => this.pick(index),
      label: (index) => {
        const entry = this.seats[index];
        return stateOf(entry.name, this.shown(entry), this.chosen.has(entry.id));
      },
    });
    this.planDirty = true;
    fill(this.element, this.seats.length ? this.plan.element : h("p", { class: "muted" }, t("seatmap.noSeats")));
    this.plan.fit();
    this.flushPlan();
    this.focus = 0;
  }

  /** Redraws the plan's seats when a state or a pick changed. */
  flushPlan() {
    if (!this.plan || !this.planDirty) return;
    this.planDirty = false;
    this.plan.paint((i) => (this.chosen.has(this.seats[i].id) ? "P" : this.shown(this.seats[i])));
  }

  draw(list) {
    this.plan = null;
    this.seats = [];
    this.byId = new Map();
    this.rows = [];
    const grid = h("div", { class: "seat-rows" });
    // Free seats in their category's colour (one custom property a category).
    (this.categories || []).forEach((c, i) => grid.style.setProperty(`--cat-${i}`, colourOf(c, i)));
    let rowLabel = null;
    let rowElement = null;
    let rowSeats = null;
    let lastNumber = 0;
    let widest = 0;
    for (const seat of list) {
      // A1 (rows × seatsPerRow), or zone-row-seat (a venue's plan).
      const match = /^([A-Z]+)(\d+)$/.exec(seat.seatNumber) || /^(.+)-(\d+)$/.exec(seat.seatNumber);
      const label = match ? match[1] : t("seatmap.otherRow");
      const number = match ? Number(match[2]) : null;
      if (label !== rowLabel) {
        rowLabel = label;
        rowSeats = [];
        this.rows.push(rowSeats);
        rowElement = h("div", { class: "seat-row" }, h("span", { class: "row-label", "aria-hidden": "true" }, label));
        grid.append(rowElement);
        lastNumber = 0;
      }
      if (number !== null && number - lastNumber > 1) {
        for (let gap = 0; gap < Math.min(number - lastNumber - 1, GAP_LIMIT); gap += 1) {
          rowElement.append(h("span", { class: "seat-gap", "aria-hidden": "true" }));
        }
      }
      if (number !== null) lastNumber = number;
      const index = this.seats.length;
      const price = seat.category ? money(seat.category.price, seat.category.currency) : null;
      const priced = price ? t("seatmap.priced", { category: seat.category.name, price }) : "";
      const name = (match ? t("seatmap.rowSeat", { row: label, seat: String(number) }) : t("seatmap.seat", { seat: seat.seatNumber })) + priced;
      const button = h("button", {
        type: "button",
        class: "seat",
        tabindex: index === 0 ? "0" : "-1",
        "data-i": index,
        "data-seat": seat.seatNumber,
        title: price ? `${seat.seatNumber} · ${seat.category.name} ${price}` : seat.seatNumber,
        "data-category": seat.category ? seat.category.name : undefined,
        "data-cat": seat.category ? seat.categoryIndex : undefined,
      });
      const entry = { id: seat.id, number: seat.seatNumber, label: seat.seatNumber, name, category: seat.category, button, state: null, r: this.rows.length - 1, c: rowSeats.length };
      this.seats.push(entry);
      this.byId.set(seat.id, entry);
      rowSeats.push(index);
      widest = Math.max(widest, rowSeats.length);
      this.paint(entry, "A");
      rowElement.append(button);
    }
    this.element.classList.toggle("dense", widest > 40);
    fill(this.element, this.seats.length ? grid : h("p", { class: "muted" }, t("seatmap.noSeats")));
    this.focus = 0;
  }

  paint(entry, state) {
    if (entry.state === state) return;
    entry.state = state;
    if (!entry.button) {
      this.planDirty = true;
      return;
    }
    const chosen = this.chosen.has(entry.id);
    const button = entry.button;
    button.dataset.state = this.shown(entry);
    button.setAttribute("aria-label", stateOf(entry.name, this.shown(entry), chosen));
    if (this.selectable) {
      button.setAttribute("aria-pressed", chosen ? "true" : "false");
      button.setAttribute("aria-disabled", state === "A" || chosen ? "false" : "true");
    } else {
      button.setAttribute("aria-disabled", "true");
    }
  }

  /** A seat's state as drawn: the viewer's own taken seats are "M". */
  shown(entry) {
    return entry.state !== "A" && this.mine.has(entry.id) ? "M" : entry.state;
  }

  /** Seats the viewer holds or bought (`owned`), or no longer does: drawn apart from others'. */
  own(ids, owned = true) {
    for (const id of ids) {
      if (owned) this.mine.add(id);
      else this.mine.delete(id);
      const entry = this.byId.get(id);
      if (entry) this.repaint(entry);
    }
  }

  /** Reads the states (a 304 when nothing changed) and repaints what did. */
  async refresh() {
    const headers = this.etag ? { "If-None-Match": this.etag } : {};
    const response = await api("GET", `/api/concerts/${this.concertId}/availability`, undefined, {
      raw: true,
      headers,
    });
    if (response.status === 304) {
      this.notModified += 1;
      this.element.dataset.notModified = String(this.notModified);
      return false;
    }
    if (!response.ok) throw new Error(t("seatmap.unreadable"));
    const body = await response.json();
    this.etag = response.headers.get("ETag");
    let unknown = false;
    const taken = [];
    let i = 0;
    for (const [first, count] of body.seatRanges) {
      for (let k = 0; k < count; k += 1) {
        const entry = this.byId.get(first + k);
        const state = body.states[i];
        i += 1;
        if (!entry) {
          unknown = true;
          continue;
        }
        if (state !== "A" && this.chosen.has(entry.id)) {
          this.chosen.delete(entry.id);
          taken.push(entry.number);
        }
        this.paint(entry, state);
      }
    }
    this.flushPlan();
    if ((unknown || i !== this.seats.length) && Date.now() - this.layoutReadAt > LAYOUT_FRESH_MS) {
      // Seats were added or removed: read the layout again (it may be a few
      // seconds old), and the states with it at the next refresh.
      await this.readLayout();
      this.etag = null;
    }
    this.onCounts({ available: body.available, held: body.held, sold: body.reserved, byCategory: body.availableByCategory || [], byArea: body.availableByArea || [] });
    this.onChange(this.selected());
    if (taken.length) this.onTaken(taken);
    return true;
  }

  repaint(entry) {
    const state = entry.state;
    entry.state = null;
    this.paint(entry, state);
    this.flushPlan();
  }

  selected() {
    return [...this.chosen];
  }

  /** The selected seats' numbers, in map order. */
  /** The chosen seats as the venue names them. */
  selectedNames() {
    return this.seats.filter((s) => this.chosen.has(s.id)).map((s) => s.label);
  }

  /** The chosen seats' total ("₩240,000"), or null without prices. */
  selectedTotal() {
    const chosen = this.seats.filter((s) => this.chosen.has(s.id));
    const currency = chosen[0]?.category?.currency;
    return totalOf(chosen.map((s) => ({ price: s.category ? s.category.price : null })), currency);
  }

  clear() {
    const was = [...this.chosen];
    this.chosen.clear();
    for (const id of was) {
      const entry = this.byId.get(id);
      if (entry) this.repaint(entry);
    }
    this.onChange([]);
  }

  click(event) {
    const button = event.target.closest("button.seat");
    if (!button) return;
    this.pick(Number(button.dataset.i));
  }

  /** A seat tapped, clicked or chosen with the keyboard: picked or let go. */
  pick(index) {
    if (!this.selectable) return;
    const entry = this.seats[index];
    this.moveFocus(index, this.plan !== null && this.plan !== undefined);
    if (this.chosen.has(entry.id)) {
      this.chosen.delete(entry.id);
    } else if (entry.state !== "A") {
      this.announce(t("seatmap.isState", { name: entry.name, state: t(STATE_NAMES[this.shown(entry)]) }));
      return;
    } else if (this.chosen.size >= this.max) {
      this.announce(t("seatmap.pickUpTo", { count: this.max }));
      return;
    } else {
      this.chosen.add(entry.id);
    }
    this.repaint(entry);
    this.onChange(this.selected());
  }

  announce(message) {
    this.element.dispatchEvent(new CustomEvent("seatmap-message", { detail: message, bubbles: true }));
  }

  key(event) {
    const entry = this.seats[this.focus];
    if (!entry) return;
    const row = this.rows[entry.r];
    let next = null;
    switch (event.key) {
      case "ArrowRight":
        next = row[Math.min(entry.c + 1, row.length - 1)];
        break;
      case "ArrowLeft":
        next = row[Math.max(entry.c - 1, 0)];
        break;
      case "ArrowDown":
      case "ArrowUp": {
        const target = this.rows[entry.r + (event.key === "ArrowDown" ? 1 : -1)];
        if (target) next = target[Math.min(entry.c, target.length - 1)];
        break;
      }
      case "Home":
        next = row[0];
        break;
      case "End":
        next = row[row.length - 1];
        break;
      case "Enter":
      case " ":
        // A grid's seat is a button, which clicks itself.
        if (!this.plan) return;
        event.preventDefault();
        this.pick(this.focus);
        return;
      default:
        return;
    }
    event.preventDefault();
    if (next !== null && next !== undefined) this.moveFocus(next, true);
  }

  moveFocus(index, focus = false) {
    if (this.plan) {
      this.focus = index;
      this.plan.focusSeat(index, focus);
      if (focus) this.plan.focus();
      return;
    }
    const old = this.seats[this.focus];
    if (old) old.button.tabIndex = -1;
    this.focus = index;
    const entry = this.seats[index];
    entry.button.tabIndex = 0;
    if (focus) entry.button.focus();
  }
}
