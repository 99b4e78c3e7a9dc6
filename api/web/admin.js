// What the organizers' staff see, each as their role allows (the server
// says what it allows, and checks it again on every call), and the tabs
// that join a concert's pages for staff.

import { api, can, canSomewhere, currentUser } from "./api.js";
import { fill, h, tell } from "./dom.js";
import { t, tNodes } from "./i18n.js";

/**
 * Shows why the page is not for the caller and answers true unless their
 * role gives `permission` on `concert` (on some organizer, without one).
 */
export function notPermitted(main, permission, concert) {
  if (concert ? can(concert, permission) : canSomewhere(permission)) return false;
  const why = currentUser()
    ? h("p", {}, t("admin.notYourRole"))
    : h("p", {}, tNodes("admin.forOperators", { login: h("a", { href: "#/login" }, t("admin.logIn")) }));
  fill(main, h("h1", {}, t("admin.operatorsOnly")), why);
  return true;
}

/** A concert's pages for staff, each with the permission it needs. */
const TABS = [
  ["sale", "admin.tabSale", "VIEW_SALE"],
  ["edit", "admin.tabEdit", "EDIT_CONCERTS"],
  ["codes", "admin.tabCodes", "MANAGE_ACCESS_CODES"],
  ["scanners", "admin.tabScanners", "MANAGE_SCANNERS"],
  ["waiting-list", "admin.tabWaiting", "MANAGE_WAITING_LIST"],
  ["desk", "admin.tabDesk", "SELL_AT_DESK"],
  ["orders", "admin.tabOrders", "VOID_ORDERS"],
];

/** The pages of `concert` the caller's role opens, `current` marked; and the buyer's page. */
export function operatorTabs(concert, current) {
  return h(
    "nav",
    { class: "tabs", "aria-label": t("admin.tabs") },
    TABS.filter(([, , permission]) => can(concert, permission)).map(([page, key]) =>
      h("a", { href: `#/admin/concerts/${concert.id}/${page}`, "aria-current": page === current ? "page" : undefined }, t(key)),
    ),
    h("a", { href: `#/concerts/${concert.id}` }, t("admin.tabBuyers")),
  );
}

/** The first of a concert's staff pages the caller's role opens, if any. */
export function firstTab(concert) {
  const tab = TABS.find(([, , permission]) => can(concert, permission));
  return tab ? `#/admin/concerts/${concert.id}/${tab[0]}` : null;
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


