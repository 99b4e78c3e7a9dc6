// "Best available" and "Standing": ask for N seats of a price category, or
// N places of a standing area, and let the line choose them; offered first
// on big concerts and on concerts with a floor, where picking on a map is
// slow and, in a rush, nearly always loses.

import { h } from "./dom.js";
import { money } from "./money.js";
import { t } from "./i18n.js";

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
    this.button = h("button", { type: "submit", class: "primary" }, t("best.find"));
    this.element = h(
      "form",
      { class: "best-available", "aria-labelledby": "best-title" },
      h("h2", { id: "best-title" }, t("best.heading")),
      h("p", { class: "muted" }, t("best.explained")),
      h("div", { class: "best-fields" }, h("label", { for: "best-count" }, t("best.tickets")), this.count, h("label", { for: "best-category" }, t("best.in")), this.category),
      h("label", { class: "best-split", for: "best-split" }, this.split, " ", t("best.apart")),
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
    showLeft(this, this.category, this.categories.map((c, i) => [label(c, byCategory[i] ?? 0), byCategory[i] ?? 0]));
  }

  set disabled(value) {
    setBusy(this, value);
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
    this.button = h("button", { type: "submit", class: "primary" }, t("standing.get"));
    this.element = h(
      "form",
      { class: "best-available standing", "aria-labelledby": "standing-title" },
      h("h2", { id: "standing-title" }, t("standing.heading")),
      h("p", { class: "muted" }, t("standing.explained")),
      h("div", { class: "best-fields" }, h("label", { for: "standing-count" }, t("best.tickets")), this.count, h("label", { for: "standing-area" }, t("standing.on")), this.area),
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
    showLeft(this, this.area, this.areas.map((a, i) => [areaLabel(a, byArea[i] ?? 0), byArea[i] ?? 0]));
  }

  set disabled(value) {
    setBusy(this, value);
  }
}

/**
 * Each option's words and whether any is free (`[text, free]` in order):
 * one with none is not chosen, and with none free at all there is nothing
 * to ask for, so the button is off until some come back.
 */
function showLeft(form, select, options) {
  options.forEach(([text, free], i) => {
    select.options[i].textContent = text;
    select.options[i].disabled = free === 0;
  });
  if (select.selectedOptions[0]?.disabled) {
    const open = [...select.options].find((option) => !option.disabled);
    if (open) select.value = open.value;
  }
  form.soldOut = options.every(([, free]) => free === 0);
  setBusy(form, form.busy);
}

/** The button is off while a request is sent, and while nothing is free. */
function setBusy(form, busy) {
  form.busy = Boolean(busy);
  if (form.button) form.button.disabled = form.busy || Boolean(form.soldOut);
}

function label(category, free) {
  return withLeft(`${category.name} · ${money(category.price, category.currency)}`, free);
}

function areaLabel(area, free) {
  return withLeft(area.price ? `${area.name} · ${area.price}` : area.name, free);
}

function withLeft(text, free) {
  if (free === undefined) return text;
  return free === 0 ? t("best.soldOut", { text }) : t("best.left", { text, count: free });
}

function range(n) {
  return Array.from({ length: Math.max(1, n) }, (_, i) => i + 1);
}
