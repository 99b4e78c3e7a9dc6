// The operator's access codes of a concert's presale: made in bulk (shown
// once, with a CSV to download for the mailing), listed with what each
// has left, and revoked one by one.

import { api } from "./api.js";
import { field, fill, h, shownOnce, table, tell, when } from "./dom.js";
import { notPermitted, operatorTabs, revokeButton } from "./admin.js";
import { locale, t } from "./i18n.js";

export async function accessCodesView(main, { params, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "MANAGE_ACCESS_CODES", concert)) return;
  const list = h("div", { class: "code-list" });
  const made = h("div", { class: "new-codes", "aria-live": "polite" });
  const once = shownOnce(signal);
  const count = h("input", { name: "count", type: "number", min: 1, max: 10000, value: 100, required: true });
  const uses = h("input", { name: "usesPerCode", type: "number", min: 1, max: 1000, value: 1, required: true });
  const seats = h("input", { name: "seatsPerCode", type: "number", min: 1, max: 1000, value: concert.maxSeatsPerOrder, required: true });
  const form = h(
    "form",
    { class: "narrow", "aria-labelledby": "make-codes" },
    h("h2", { id: "make-codes" }, t("codes.make")),
    h("p", { class: "muted" }, concert.presaleStartsAt ? t("codes.presaleFrom", { when: when(concert, "presaleStartsAt") }) : t("codes.noPresale")),
    field(t("codes.count"), count),
    field(t("codes.usesPerCode"), uses),
    field(t("codes.seatsPerCode"), seats),
    h("button", { type: "submit", class: "primary" }, t("codes.makeButton")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const answer = await api("POST", `/api/concerts/${id}/access-codes`, {
        count: Number(count.value),
        usesPerCode: Number(uses.value),
        seatsPerCode: Number(seats.value),
      });
      once.set(answer.codes);
      showMade(made, concert, answer.codes);
      await refresh();
    } catch (e) {
      tell(e.message);
    } finally {
      button.disabled = false;
    }
  });
  const refresh = async () => fill(list, codeTable(await api("GET", `/api/concerts/${id}/access-codes`, undefined, { signal }), id, refresh));
  fill(
    main,
    h("h1", {}, t("codes.heading", { title: concert.title })),
    operatorTabs(concert, "codes"),
    form,
    made,
    h("h2", {}, t("codes.all")),
    list,
  );
  if (once.get()) showMade(made, concert, once.get());
  await refresh();
}

/** The codes just made: shown this once, and as a CSV file. */
function showMade(element, concert, codes) {
  const csv = `id,code\n${codes.map((c) => `${c.id},${c.code}`).join("\n")}\n`;
  const url = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
  fill(
    element,
    h("p", { class: "notice info", role: "status" }, t("codes.shownOnce", { count: codes.length })),
    h("p", {}, h("a", { class: "button", href: url, download: `access-codes-${concert.id}.csv` }, t("codes.download"))),
    h("ul", { class: "codes" }, codes.slice(0, 20).map((c) => h("li", {}, h("code", {}, c.code)))),
    codes.length > 20 ? h("p", { class: "muted" }, t("codes.more", { count: codes.length - 20 })) : null,
  );
}

function codeTable(codes, concertId, refresh) {
  if (codes.length === 0) return h("p", { class: "muted" }, t("codes.none"));
  const numbers = new Intl.NumberFormat(locale());
  const live = codes.filter((c) => !c.revoked);
  const used = live.filter((c) => c.uses > 0 || c.userId !== null).length;
  const summary = h("p", { class: "code-summary" }, t("codes.summary", { count: codes.length, used, revoked: codes.length - live.length }));
  const rows = codes.map((c) => {
    const revoke = revokeButton(`/api/concerts/${concertId}/access-codes/${c.id}`, t("codes.revoked", { id: String(c.id) }), refresh);
    return h(
      "tr",
      { "data-code": c.id },
      h("td", {}, String(c.id)),
      h("td", {}, numbers.format(c.uses)),
      h("td", {}, numbers.format(c.usesLeft)),
      h("td", {}, numbers.format(c.seatsLeft)),
      h("td", {}, c.userId === null ? "–" : t("codes.account", { id: String(c.userId) })),
      h("td", {}, c.revoked ? h("span", { class: "status cancelled" }, t("codes.isRevoked")) : revoke),
    );
  });
  const head = ["codes.id", "codes.uses", "codes.usesLeft", "codes.seatsLeft", "codes.boundTo", "codes.state"];
  return [
    summary,
    table(head, rows),
  ];
}
