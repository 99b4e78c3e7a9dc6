// What only the box office's operators (admins) see, and the tabs that
// join an operator's pages of one concert.

import { api, isAdmin } from "./api.js";
import { fill, h, tell } from "./dom.js";
import { t, tNodes } from "./i18n.js";

/** Shows "operators only" and answers true unless the caller is an admin. */
export function adminOnly(main) {
  if (isAdmin()) return false;
  fill(main, h("h1", {}, t("admin.operatorsOnly")), h("p", {}, tNodes("admin.forOperators", { login: h("a", { href: "#/login" }, t("admin.logIn")) })));
  return true;
}

const TABS = [
  ["sale", "admin.tabSale"],
  ["edit", "admin.tabEdit"],
  ["codes", "admin.tabCodes"],
  ["scanners", "admin.tabScanners"],
  ["waiting-list", "admin.tabWaiting"],
];

/** The operator's pages of `concert`, `current` marked; and the buyer's page. */
export function operatorTabs(concert, current) {
  return h(
    "nav",
    { class: "tabs", "aria-label": t("admin.tabs") },
    TABS.map(([page, key]) =>
      h("a", { href: `#/admin/concerts/${concert.id}/${page}`, "aria-current": page === current ? "page" : undefined }, t(key)),
    ),
    h("a", { href: `#/concerts/${concert.id}` }, t("admin.tabBuyers")),
  );
}

/**
 * "Revoke", then "Really revoke?": the second click sends `DELETE path`,
 * tells `done` and calls `onRevoked`.
 */
export function revokeButton(path, done, onRevoked) {
  const button = h("button", { type: "button", class: "danger" }, t("admin.revoke"));
  let armed = false;
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      fill(button, t("admin.reallyRevoke"));
      return;
    }
    button.disabled = true;
    try {
      await api("DELETE", path);
      tell(done, "info");
      await onRevoked();
    } catch (e) {
      tell(e.message);
      button.disabled = false;
    }
  });
  return button;
}


