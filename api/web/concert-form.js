// The operator's concert form (create, edit, delete), in groups: the show,
// its seats (and plan, and standing areas), its prices, the sale, and the
// fair shares. Times are typed in the venue's zone.

import { Problem, api, workingOrganizer } from "./api.js";
import { clockAt, field, fill, fromZonedInput, h, ownTimeZone, roughly, tell, toZonedInput } from "./dom.js";
import { firstTab, notPermitted, operatorTabs } from "./admin.js";
import { t } from "./i18n.js";
import { AreaEditor, CategoryEditor, planUpload } from "./concert-editors.js";

/** The groups and their fields; a field's label and hint are `form.f.<name>` and `form.h.<name>`. */
const GROUPS = [
  ["form.show", [
    { name: "title", type: "text", required: true },
    { name: "venue", type: "text", required: true },
    { name: "timeZone", type: "zone", required: true },
    { name: "concertDate", type: "datetime-local", required: true },
  ]],
  ["form.seats", [
    { name: "rows", type: "number", min: 1, max: 100000, value: 10, createOnly: true },
    { name: "seatsPerRow", type: "number", min: 1, max: 100000, value: 20, createOnly: true },
  ]],
  ["form.prices", []],
  ["form.sale", [
    { name: "opensAt", type: "datetime-local" },
    { name: "presaleStartsAt", type: "datetime-local" },
    { name: "lotteryWindowSeconds", type: "number", min: 0, max: 86400, value: 0 },
    // A priced concert must hold while its fans pay: the form starts at the
    // payment default the API gives one, and 0 stays for free concerts.
    { name: "holdSeconds", type: "number", min: 0, max: 3600, value: 900 },
    { name: "refundableUntil", type: "datetime-local" },
  ]],
  ["form.fairShares", [
    { name: "maxSeatsPerOrder", type: "number", min: 1, max: 10, value: 4 },
    { name: "maxSeatsPerUser", type: "number", min: 1, max: 100 },
    { name: "waitingListOfferSeconds", type: "number", min: 1, max: 86400, value: 900 },
    { name: "proofOfWork", type: "number", min: 0, max: 12, value: 0 },
  ]],
];
const FIELDS = GROUPS.flatMap(([, fields]) => fields);
const LABELS = {
  title: "form.f.title",
  venue: "form.f.venue",
  timeZone: "form.f.timeZone",
  concertDate: "form.f.concertDate",
  rows: "form.f.rows",
  seatsPerRow: "form.f.seatsPerRow",
  opensAt: "form.f.opensAt",
  presaleStartsAt: "form.f.presaleStartsAt",
  lotteryWindowSeconds: "form.f.lotteryWindowSeconds",
  holdSeconds: "form.f.holdSeconds",
  refundableUntil: "form.f.refundableUntil",
  maxSeatsPerOrder: "form.f.maxSeatsPerOrder",
  maxSeatsPerUser: "form.f.maxSeatsPerUser",
  waitingListOfferSeconds: "form.f.waitingListOfferSeconds",
  proofOfWork: "form.f.proofOfWork",
};
const HINTS = {
  timeZone: "form.h.timeZone",
  opensAt: "form.h.opensAt",
  presaleStartsAt: "form.h.presaleStartsAt",
  refundableUntil: "form.h.refundableUntil",
  maxSeatsPerUser: "form.h.maxSeatsPerUser",
  proofOfWork: "form.h.proofOfWork",
};

/** "15 minutes", "1 hour", "90 seconds": a whole span as the form's number means it. */
function span(seconds) {
  if (seconds >= 3600 && seconds % 3600 === 0) return t("form.m.hours", { count: seconds / 3600 });
  if (seconds >= 60 && seconds % 60 === 0) return t("form.m.minutes", { count: seconds / 60 });
  return t("form.m.seconds", { count: seconds });
}

// A level of work doubles it; level 7 takes about 0.3 s in a phone's browser.
const WORK_MS_AT_LEVEL_0 = 300 / 2 ** 7;

/**
 * What a number on the form means for the sale, in the operator's terms,
 * said again as it is typed: `(value, read, zone)`, `read(name)` another
 * field, `zone` the venue's (when the browser knows it).
 */
const MEANS = {
  lotteryWindowSeconds: (seconds, read, zone) => {
    if (!(seconds > 0)) return t("form.m.noLottery");
    const opens = read("opensAt");
    if (!opens) return t("form.m.lottery", { span: span(seconds) });
    const from = new Date(new Date(opens).getTime() - seconds * 1000).toISOString();
    return t("form.m.lotteryFrom", { span: span(seconds), from: clockAt(from, zone), opens: clockAt(opens, zone) });
  },
  holdSeconds: (seconds) => (seconds > 0 ? t("form.m.hold", { span: span(seconds) }) : t("form.m.noHold")),
  waitingListOfferSeconds: (seconds) => (seconds > 0 ? t("form.m.offer", { span: span(seconds) }) : null),
  proofOfWork: (level) => (level > 0 ? t("form.m.work", { time: roughly(WORK_MS_AT_LEVEL_0 * 2 ** level) }) : t("form.m.noWork")),
};

/** Whether the browser knows `zone` (else the server says what is wrong). */
function validZone(zone) {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function concertForm(main, { heading, concert, submit, send, extra, before }) {
  const inputs = {};
  const errors = {};
  const problems = h("div", { class: "form-errors", "aria-live": "polite" });
  // The venue's zone the form's times are in: the concert's, or the one typed.
  const zone = () => inputs.timeZone?.value.trim() || concert?.timeZone || ownTimeZone();
  const zones = h("datalist", { id: "time-zones" }, (Intl.supportedValuesOf?.("timeZone") || []).map((z) => h("option", { value: z })));
  const categories = new CategoryEditor(concert?.categories || []);
  const areas = new AreaEditor(concert?.areas || [], categories);
  const extras = { "form.seats": [concert ? planUpload(concert, { onUploaded: () => tell(t("form.planSaved"), "info") }) : null, areas.element], "form.prices": [categories.element] };
  const groups = GROUPS.map(([legend, fields]) => {
    const body = h("div", { class: "group-fields" });
    const shown = fields.filter((f) => !(concert && f.createOnly));
    return { legend, shown, body, element: h("fieldset", { class: "group" }, h("legend", {}, t(legend)), body, extras[legend] || null) };
  });
  // The number's meaning, said again whenever any field changes (the
  // lottery's times hang on the opening and the zone).
  const readings = [];
  const read = (name) => {
    const input = inputs[name];
    if (!input || input.value === "") return null;
    if (FIELDS.find((f) => f.name === name)?.type === "datetime-local") return validZone(zone()) ? fromZonedInput(input.value, zone()) : null;
    return input.value.trim();
  };
  const meaning = (name) => {
    const said = h("small", { class: "hint means", "aria-live": "polite" });
    const say = () => fill(said, MEANS[name](Number(inputs[name].value), read, validZone(zone()) ? zone() : "UTC") || "");
    readings.push(say);
    say();
    return said;
  };
  const render = () => {
    readings.length = 0;
    for (const group of groups) {
      fill(
        group.body,
        group.shown.map((f) => {
          const input = inputs[f.name] || h("input", { name: f.name, type: f.type === "zone" ? "text" : f.type, list: f.type === "zone" ? "time-zones" : undefined, min: f.min, max: f.max, required: f.required, step: f.type === "number" ? 1 : undefined });
          if (!inputs[f.name]) {
            inputs[f.name] = input;
            // A new concert is in the operator's own zone until they say.
            const current = concert ? concert[f.name] : f.type === "zone" ? ownTimeZone() : f.value;
            input.value = f.type === "datetime-local" ? toZonedInput(current, zone()) : current ?? "";
          }
          const hint = HINTS[f.name] ? h("small", { class: "hint" }, t(HINTS[f.name])) : null;
          const shownField = field(t(LABELS[f.name]), input, errors[f.name]);
          if (hint) shownField.append(hint);
          if (MEANS[f.name]) shownField.append(meaning(f.name));
          return shownField;
        }),
      );
    }
    categories.problem(errors.categories);
    areas.problem(errors.areas);
  };
  const form = h(
    "form",
    {
      class: "concert-form",
      novalidate: true,
      oninput: () => {
        for (const say of readings) say();
      },
      onsubmit: async (event) => {
        event.preventDefault();
        const values = {};
        for (const [name, input] of Object.entries(inputs)) {
          const spec = FIELDS.find((f) => f.name === name);
          if (spec.type === "number") values[name] = input.value === "" ? null : Number(input.value);
          else if (spec.type === "datetime-local") values[name] = validZone(zone()) ? fromZonedInput(input.value, zone()) : null;
          else values[name] = input.value.trim();
        }
        // The lists go only when changed: a new list re-prices every seat
        // (categories) or is refused once places were asked for (areas).
        if (categories.changed()) values.categories = categories.value();
        if (areas.changed()) values.areas = areas.value();
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
    before,
    groups.map((g) => g.element),
    zones,
    problems,
    h("p", { class: "actions" }, h("button", { type: "submit", class: "primary" }, submit), extra),
  );
  render();
  fill(main, form);
  inputs.title.focus();
}

export function newConcertView(main) {
  if (notPermitted(main, "EDIT_CONCERTS")) return;
  const organizer = workingOrganizer("EDIT_CONCERTS");
  concertForm(main, {
    heading: t("form.newHeading"),
    submit: t("form.create"),
    send: async (values) => {
      const body = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null && v !== ""));
      if (Array.isArray(body.areas) && body.areas.length === 0) delete body.areas;
      if (organizer) body.organizerId = organizer.id;
      const created = await api("POST", "/api/concerts", body);
      location.hash = firstTab(created) || `#/concerts/${created.id}`;
    },
  });
}

export async function editConcertView(main, { params, signal }) {
  const concert = await api("GET", `/api/concerts/${params.id}`, undefined, { signal });
  if (notPermitted(main, "EDIT_CONCERTS", concert)) return;
  let armed = false;
  const remove = h("button", {
    type: "button",
    class: "danger",
    onclick: async () => {
      if (!armed) {
        armed = true;
        fill(remove, t("form.reallyDelete"));
        return;
      }
      try {
        await api("DELETE", `/api/concerts/${concert.id}`);
        tell(t("form.deleted", { title: concert.title }), "info", { acrossNavigation: true });
        location.hash = "#/";
      } catch (e) {
        tell(e.message);
        armed = false;
        fill(remove, t("form.delete"));
      }
    },
  }, t("form.delete"));
  concertForm(main, {
    heading: t("form.editHeading", { title: concert.title }),
    concert,
    before: operatorTabs(concert, "edit"),
    submit: t("form.save"),
    extra: remove,
    send: async (values) => {
      await api("PATCH", `/api/concerts/${concert.id}`, values);
      tell(t("account.saved"), "info", { acrossNavigation: true });
      location.hash = `#/admin/concerts/${concert.id}/sale`;
    },
  });
}
