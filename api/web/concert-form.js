// The operator's concert form: create, edit, delete.

import { Problem, api } from "./api.js";
import { field, fill, fromZonedInput, h, ownTimeZone, tell, toZonedInput } from "./dom.js";
import { adminOnly } from "./admin.js";

const FIELDS = [
  { name: "title", label: "Title", type: "text", required: true },
  { name: "venue", label: "Venue", type: "text", required: true },
  { name: "timeZone", label: "Venue's time zone (the times below are in it)", type: "zone", required: true },
  { name: "concertDate", label: "Concert date and time", type: "datetime-local", required: true },
  { name: "rows", label: "Rows", type: "number", min: 1, max: 100000, value: 10, createOnly: true },
  { name: "seatsPerRow", label: "Seats per row", type: "number", min: 1, max: 100000, value: 20, createOnly: true },
  { name: "holdSeconds", label: "Hold seconds (0: confirmed at once)", type: "number", min: 0, max: 3600, value: 0 },
  { name: "maxSeatsPerOrder", label: "Seats per order", type: "number", min: 1, max: 10, value: 4 },
  { name: "maxSeatsPerUser", label: "Seats per fan, all orders together (empty: seats per order)", type: "number", min: 1, max: 100 },
  { name: "opensAt", label: "Sale opens (empty: on sale at once)", type: "datetime-local" },
  { name: "presaleStartsAt", label: "Presale with access codes starts (before the opening; empty: none)", type: "datetime-local" },
  { name: "lotteryWindowSeconds", label: "Lottery window, seconds before the opening", type: "number", min: 0, max: 86400, value: 0 },
  { name: "waitingListOfferSeconds", label: "Seconds a waiting-list offer is held", type: "number", min: 1, max: 86400, value: 900 },
  { name: "proofOfWork", label: "Proof of work per request (0: none; 1–12, each level doubles the work; 7: about a third of a second in a browser)", type: "number", min: 0, max: 12, value: 0 },
];

/** Whether the browser knows `zone` (else the server says what is wrong). */
function validZone(zone) {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function concertForm(main, { heading, concert, submit, send, extra }) {
  const inputs = {};
  const errors = {};
  const body = h("div");
  const problems = h("div", { class: "form-errors", "aria-live": "polite" });
  // The venue's zone the form's times are in: the concert's, or the one typed.
  const zone = () => inputs.timeZone?.value.trim() || concert?.timeZone || ownTimeZone();
  const zones = h("datalist", { id: "time-zones" }, (Intl.supportedValuesOf?.("timeZone") || []).map((z) => h("option", { value: z })));
  const render = () =>
    fill(
      body,
      FIELDS.filter((f) => !(concert && f.createOnly)).map((f) => {
        const input = inputs[f.name] || h("input", { name: f.name, type: f.type === "zone" ? "text" : f.type, list: f.type === "zone" ? "time-zones" : undefined, min: f.min, max: f.max, required: f.required, step: f.type === "number" ? 1 : undefined });
        if (!inputs[f.name]) {
          inputs[f.name] = input;
          // A new concert is in the operator's own zone until they say.
          const current = concert ? concert[f.name] : f.type === "zone" ? ownTimeZone() : f.value;
          input.value = f.type === "datetime-local" ? toZonedInput(current, zone()) : current ?? "";
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
          else if (spec.type === "datetime-local") values[name] = validZone(zone()) ? fromZonedInput(input.value, zone()) : null;
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
    zones,
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
