// "Best available" and "Standing": ask for N seats of a price category, or
// N places of a standing area, and let the line choose them; offered first
// on big concerts and on concerts with a floor, where picking on a map is
// slow and, in a rush, nearly always loses.

import { h } from "./dom.js";
import { money } from "./money.js";

/** Whether the concert offers asking by count first (before its map). */
export function bestFirst(concert) {
  const seats = (concert.availableSeats || 0) + (concert.heldSeats || 0) + (concert.reservedSeats || 0);
  return seats > 1000 || (concert.areas || []).length > 0;
}

/**
 * The form: a count, a category, "seats apart are fine", and a button;
 * `onAsk({category, count, allowSplit})` sends the request. Null without
 * price categories (there is nothing to ask for by name).
 */
export class BestAvailable {
  constructor(concert, { onAsk }) {
    const categories = concert.categories || [];
    this.element = null;
    if (categories.length === 0) return;
    this.count = h("select", { name: "count", id: "best-count" }, ...range(concert.maxSeatsPerOrder).map((n) => h("option", { value: n }, String(n))));
    this.categories = categories;
    this.category = h("select", { name: "category", id: "best-category" }, ...categories.map((c) => h("option", { value: c.name }, label(c))));
    this.split = h("input", { type: "checkbox", name: "allowSplit", id: "best-split" });
    this.button = h("button", { type: "submit", class: "primary" }, "Find me the best seats");
    this.element = h(
      "form",
      { class: "best-available", "aria-labelledby": "best-title" },
      h("h2", { id: "best-title" }, "Best available"),
      h("p", { class: "muted" }, "Say how many and where: the line gives you the best seats side by side that the fans ahead of you left."),
      h("div", { class: "best-fields" }, h("label", { for: "best-count" }, "Tickets"), this.count, h("label", { for: "best-category" }, "in"), this.category),
      h("label", { class: "best-split", for: "best-split" }, this.split, " Seats apart are fine if no block is left"),
      this.button,
    );
    this.element.addEventListener("submit", (e) => {
      e.preventDefault();
      onAsk({ category: this.category.value, count: Number(this.count.value), allowSplit: this.split.checked });
    });
  }

  /** Shows how many seats of each category are free (availability's `availableByCategory`). */
  left(byCategory) {
    if (!this.element) return;
    this.categories.forEach((c, i) => {
      const free = byCategory[i] ?? 0;
      const option = this.category.options[i];
      option.textContent = label(c, free);
      option.disabled = free === 0;
    });
  }

  set disabled(value) {
    if (this.button) this.button.disabled = value;
  }
}

/**
 * "Standing: N tickets on [area]": places without seat numbers, entry
 * numbers in line order; `onAsk({area, count})` sends the request. Null
 * without standing areas.
 */
export class Standing {
  constructor(concert, { onAsk }) {
    const areas = concert.areas || [];
    this.element = null;
    if (areas.length === 0) return;
    const priceOf = (area) => {
      const categories = concert.categories || [];
      const category = categories.find((c) => c.name === area.category) || categories[0];
      return category ? money(category.price, category.currency) : "";
    };
    this.areas = areas.map((a) => ({ name: a.name, price: priceOf(a) }));
    this.count = h("select", { name: "count", id: "standing-count" }, ...range(concert.maxSeatsPerOrder).map((n) => h("option", { value: n }, String(n))));
    this.area = h("select", { name: "area", id: "standing-area" }, ...this.areas.map((a) => h("option", { value: a.name }, areaLabel(a))));
    this.button = h("button", { type: "submit", class: "primary" }, "Get standing tickets");
    this.element = h(
      "form",
      { class: "best-available standing", "aria-labelledby": "standing-title" },
      h("h2", { id: "standing-title" }, "Standing"),
      h("p", { class: "muted" }, "No seat numbers: you enter by your entry number, and the earlier you are in line, the lower it is."),
      h("div", { class: "best-fields" }, h("label", { for: "standing-count" }, "Tickets"), this.count, h("label", { for: "standing-area" }, "on"), this.area),
      this.button,
    );
    this.element.addEventListener("submit", (e) => {
      e.preventDefault();
      onAsk({ area: this.area.value, count: Number(this.count.value) });
    });
  }

  /** Shows how many places of each area are free (availability's `availableByArea`). */
  left(byArea) {
    if (!this.element) return;
    this.areas.forEach((a, i) => {
      const free = byArea[i] ?? 0;
      const option = this.area.options[i];
      option.textContent = areaLabel(a, free);
      option.disabled = free === 0;
    });
  }

  set disabled(value) {
    if (this.button) this.button.disabled = value;
  }
}

function label(category, free) {
  return withLeft(`${category.name} · ${money(category.price, category.currency)}`, free);
}

function areaLabel(area, free) {
  return withLeft(area.price ? `${area.name} · ${area.price}` : area.name, free);
}

function withLeft(text, free) {
  if (free === undefined) return text;
  return free === 0 ? `${text} · sold out` : `${text} · ${free} left`;
}

function range(n) {
  return Array.from({ length: Math.max(1, n) }, (_, i) => i + 1);
}
