// "Best available": ask for N seats of a price category and let the line
// choose them; offered first on big concerts, where picking on a map is
// slow and, in a rush, nearly always loses.

import { h } from "./dom.js";
import { money } from "./money.js";

/** Whether the concert offers best available first (before its map). */
export function bestFirst(concert) {
  const seats = (concert.availableSeats || 0) + (concert.heldSeats || 0) + (concert.reservedSeats || 0);
  return seats > 1000;
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

function label(category, free) {
  const price = `${category.name} · ${money(category.price, category.currency)}`;
  if (free === undefined) return price;
  return free === 0 ? `${price} · sold out` : `${price} · ${free} left`;
}

function range(n) {
  return Array.from({ length: Math.max(1, n) }, (_, i) => i + 1);
}
