// The concert form's lists: price categories (name, price, colour, rows)
// and standing areas (name, places, category), each a row of inputs that
// can be added and removed; and the seating plan's upload.

import { Problem, api } from "./api.js";
import { field, fill, h } from "./dom.js";
import { t } from "./i18n.js";
import { decimalsOf } from "./money.js";
import { colourOf } from "./palette.js";

/** An input of a list's row with its label above it. */
function cell(label, input) {
  return h("label", { class: "cell" }, h("span", {}, label), input);
}

/** A list of rows of inputs, with "Add" and a "Remove" on each row. */
class RowList {
  constructor({ heading, addLabel, empty, makeRow }) {
    this.makeRow = makeRow;
    this.rows = [];
    this.body = h("div", { class: "row-list" });
    this.error = h("p", { class: "field-error", hidden: true });
    this.empty = h("p", { class: "muted" }, empty);
    this.element = h(
      "div",
      { class: "editor" },
      h("h3", {}, heading),
      this.body,
      this.empty,
      this.error,
      h("button", { type: "button", onclick: () => this.add() }, addLabel),
    );
  }

  add(values = {}) {
    const row = this.makeRow(values, this.rows.length);
    const remove = h("button", { type: "button", class: "link", onclick: () => this.remove(row) }, t("form.remove"));
    row.element.append(remove);
    this.rows.push(row);
    this.body.append(row.element);
    this.empty.hidden = true;
    row.focus?.();
  }

  remove(row) {
    this.rows = this.rows.filter((r) => r !== row);
    row.element.remove();
    this.empty.hidden = this.rows.length > 0;
  }

  value() {
    return this.rows.map((r) => r.value());
  }

  /** What the list holds now is what it started with (see `changed`). */
  remember() {
    this.initial = JSON.stringify(this.value());
  }

  changed() {
    return JSON.stringify(this.value()) !== this.initial;
  }

  /** Shows (or clears) the API's word on the whole list. */
  problem(message) {
    this.error.hidden = !message;
    fill(this.error, message || "");
  }
}

/** Price categories: one currency for all; prices typed in its major unit. */
export class CategoryEditor extends RowList {
  constructor(categories = []) {
    super({
      heading: t("form.categories"),
      addLabel: t("form.addCategory"),
      empty: t("form.noCategories"),
      makeRow: (values, index) => {
        const name = h("input", { name: "categoryName", maxlength: 40, value: values.name || "" });
        // A rename is told as it is typed, so that what names the
        // category (a standing area) follows it.
        // Emptied on the way to a new name (cleared, then typed), it is
        // still the category it was.
        let was = name.value.trim();
        name.addEventListener("input", () => {
          const now = name.value.trim();
          if (!now || now === was) return;
          this.namesChanged({ from: was, to: now });
          was = now;
        });
        const decimals = decimalsOf(values.currency || this.currency.value);
        const price = h("input", {
          name: "categoryPrice",
          type: "number",
          min: 0,
          step: "any",
          inputmode: "decimal",
          value: values.price === undefined ? "" : values.price / 10 ** decimals,
        });
        const colour = h("input", { name: "categoryColour", type: "color", value: colourOf(values, index) });
        const rows = h("input", { name: "categoryRows", value: (values.rows || []).join(", "), placeholder: "A, B" });
        return {
          element: h(
            "div",
            { class: "editor-row category-row" },
            cell(t("form.categoryName"), name),
            cell(t("form.categoryPrice"), price),
            cell(t("form.categoryColour"), colour),
            cell(t("form.categoryRows"), rows),
          ),
          focus: () => name.focus(),
          value: () => {
            const minor = Math.round(Number(price.value) * 10 ** decimalsOf(this.currency.value.trim().toUpperCase()));
            return {
              name: name.value.trim(),
              price: Number.isFinite(minor) ? minor : -1,
              currency: this.currency.value.trim().toUpperCase(),
              colour: colour.value,
              rows: rows.value.split(/[\s,]+/).filter(Boolean).map((r) => r.toUpperCase()),
            };
          },
        };
      },
    });
    this.watchers = [];
    this.currency = h("input", { name: "currency", maxlength: 3, value: categories[0]?.currency || t("form.defaultCurrency"), class: "short" });
    this.element.insertBefore(field(t("form.currency"), this.currency), this.body);
    for (const c of categories) this.add(c);
    this.remember();
  }

  names() {
    return this.value().map((c) => c.name).filter(Boolean);
  }

  /** `watcher({from, to})` on a rename, `watcher()` on a row added or removed. */
  watchNames(watcher) {
    this.watchers.push(watcher);
  }

  namesChanged(renamed) {
    for (const watcher of this.watchers || []) watcher(renamed);
  }

  add(values) {
    super.add(values);
    this.namesChanged();
  }

  remove(row) {
    super.remove(row);
    this.namesChanged();
  }
}

/** Standing areas: a name, its places, and the category they are sold in. */
export class AreaEditor extends RowList {
  constructor(areas = [], categories) {
    super({
      heading: t("form.areas"),
      addLabel: t("form.addArea"),
      empty: t("form.noAreas"),
      makeRow: (values) => {
        const name = h("input", { name: "areaName", maxlength: 40, value: values.name || "" });
        const capacity = h("input", { name: "areaCapacity", type: "number", min: 1, max: 100000, value: values.capacity || 100 });
        const category = h("select", { name: "areaCategory" });
        const gone = h("small", { class: "field-error", role: "alert" });
        let chosen = values.category || "";
        // The list is always the categories as typed now; a category that
        // went stays chosen, marked, until another is chosen.
        const options = (renamed) => {
          if (renamed && chosen && chosen === renamed.from) chosen = renamed.to;
          const names = categories.names();
          const missing = chosen && !names.includes(chosen);
          fill(
            category,
            h("option", { value: "" }, t("form.firstCategory")),
            names.map((n) => h("option", { value: n, selected: n === chosen }, n)),
            missing ? h("option", { value: chosen, selected: true }, t("form.categoryGone", { name: chosen })) : null,
          );
          category.setAttribute("aria-invalid", missing ? "true" : "false");
          fill(gone, missing ? t("form.areaCategoryGone", { name: chosen }) : "");
        };
        category.addEventListener("change", () => {
          chosen = category.value;
          options();
        });
        options();
        return {
          element: h("div", { class: "editor-row area-row" }, cell(t("form.areaName"), name), cell(t("form.areaCapacity"), capacity), cell(t("form.areaCategory"), category), gone),
          focus: () => name.focus(),
          categoriesChanged: options,
          value: () => ({ name: name.value.trim(), capacity: Number(capacity.value), ...(chosen ? { category: chosen } : {}) }),
        };
      },
    });
    for (const a of areas) this.add(a);
    this.remember();
    categories.watchNames((renamed) => {
      for (const row of this.rows) row.categoriesChanged(renamed);
    });
  }
}

/** What a refused plan's field error means, by the plan's own field. */
const PLAN_REFUSALS = {
  category: "form.planRefusedCategory",
  seat_guid: "form.planRefusedGuid",
  seat_number: "form.planRefusedNumber",
  position: "form.planRefusedPosition",
  zones: "form.planRefusedSeats",
};

/** Why the API refused a plan, in words, with what to do about it. */
function planRefusal(e, concert) {
  if (!(e instanceof Problem) || e.code !== "VALIDATION_ERROR" || !e.body.errors?.length) return [e.message];
  return e.body.errors.map(({ field: part, params = {} }) => {
    const place = params.zone
      ? t("form.planSeatInZone", params)
      : t("form.planSeat", params);
    const known = (concert.categories || []).map((c) => `“${c.name}”`).join(", ") || t("form.noCategories");
    const key = PLAN_REFUSALS[part] || "form.planRefusedOther";
    return t(key, { ...params, place, known, part });
  });
}

/** A venue's seating plan (pretix's JSON) put in place of the concert's seats. */
export function planUpload(concert, { onUploaded }) {
  const file = h("input", { name: "seatingPlan", type: "file", accept: "application/json,.json" });
  const said = h("p", { class: "muted", role: "status" }, t("form.planHint"));
  // Beside the button that was pressed, read out when it appears.
  const refused = h("div", { class: "plan-refused", role: "alert" });
  const send = h("button", { type: "button" }, t("form.uploadPlan"));
  send.addEventListener("click", async () => {
    fill(refused);
    const chosen = file.files[0];
    if (!chosen) {
      fill(refused, h("p", { class: "error" }, t("form.chooseFile")));
      return;
    }
    send.disabled = true;
    try {
      let plan;
      try {
        plan = JSON.parse(await chosen.text());
      } catch {
        fill(refused, h("p", { class: "error" }, t("form.notJson")));
        return;
      }
      const result = await api("PUT", `/api/concerts/${concert.id}/seating-plan`, plan);
      fill(said, t("form.planUploaded", { name: result.name, count: result.seatCount }));
      onUploaded?.(result);
    } catch (e) {
      fill(
        refused,
        h("p", { class: "error" }, t("form.planNotPlaced")),
        ...planRefusal(e, concert).map((words) => h("p", { class: "error" }, words)),
      );
    } finally {
      send.disabled = false;
    }
  });
  return h("div", { class: "editor plan-upload" }, h("h3", {}, t("form.plan")), field(t("form.planFile"), file), said, send, refused);
}
