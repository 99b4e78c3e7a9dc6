// The operator's door scanners of a concert: made with a name (the token
// shown once, with a pairing code and its QR that a door device reads),
// listed, and revoked.

import { api } from "./api.js";
import { dateTime, field, fill, h, shownOnce, table, tell } from "./dom.js";
import { notPermitted, operatorTabs, revokeButton } from "./admin.js";
import { t } from "./i18n.js";

export async function scannersView(main, { params, signal }) {
  const id = Number(params.id);
  const concert = await api("GET", `/api/concerts/${id}`, undefined, { signal });
  if (notPermitted(main, "MANAGE_SCANNERS", concert)) return;
  const list = h("div", { class: "scanner-list" });
  const made = h("div", { class: "new-scanner", "aria-live": "polite" });
  const name = h("input", { name: "name", required: true, maxlength: 80, placeholder: t("scanners.namePlaceholder") });
  const once = shownOnce(signal);
  const form = h(
    "form",
    { class: "narrow", "aria-labelledby": "make-scanner" },
    h("h2", { id: "make-scanner" }, t("scanners.make")),
    field(t("scanners.name"), name),
    h("button", { type: "submit", class: "primary" }, t("scanners.makeButton")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const scanner = await api("POST", `/api/concerts/${id}/scanners`, { name: name.value.trim() });
      name.value = "";
      once.set(scanner);
      showMade(made, scanner);
      await refresh();
    } catch (e) {
      tell(e.message);
    } finally {
      button.disabled = false;
    }
  });
  const refresh = async () => fill(list, scannerTable(await api("GET", `/api/concerts/${id}/scanners`, undefined, { signal }), concert, id, refresh));
  fill(
    main,
    h("h1", {}, t("scanners.heading", { title: concert.title })),
    operatorTabs(concert, "scanners"),
    h("p", { class: "muted" }, t("scanners.explained")),
    form,
    made,
    h("h2", {}, t("scanners.all")),
    list,
  );
  if (once.get()) showMade(made, once.get());
  await refresh();
}

/** A new scanner's pairing: its QR for the door device's camera, and the code to paste. */
function showMade(element, scanner) {
  // The server's own SVG (no script in it), shown as an image.
  const qr = h("img", { class: "qr pairing-qr", alt: t("scanners.qrAlt", { name: scanner.name }), width: 240, height: 240 });
  qr.src = `data:image/svg+xml;base64,${btoa(scanner.pairingQr)}`;
  fill(
    element,
    h("h3", {}, t("scanners.pairHeading", { name: scanner.name })),
    h("p", { class: "notice info", role: "status" }, t("scanners.shownOnce")),
    qr,
    field(t("scanners.pairingCode"), h("input", { name: "pairingCode", readonly: true, value: scanner.pairingCode, class: "pairing-code" })),
    h("p", { class: "muted" }, t("scanners.howToPair")),
  );
}

function scannerTable(scanners, concert, concertId, refresh) {
  if (scanners.length === 0) return h("p", { class: "muted" }, t("scanners.none"));
  const at = (iso) => dateTime(iso, concert.timeZone);
  const rows = scanners.map((s) => {
    const revoke = revokeButton(`/api/concerts/${concertId}/scanners/${s.scannerId}`, t("scanners.revoked", { name: s.name }), refresh);
    return h(
      "tr",
      { "data-scanner": s.scannerId },
      h("td", {}, s.name),
      h("td", {}, at(s.createdAt)),
      h("td", {}, s.revokedAt ? h("span", { class: "status cancelled" }, t("scanners.revokedAt", { when: at(s.revokedAt) })) : revoke),
    );
  });
  const head = ["scanners.nameColumn", "scanners.made", "scanners.state"];
  return table(head, rows);
}
