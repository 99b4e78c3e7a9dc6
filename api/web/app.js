// The box office's page: a hash router over the buyer's and the operator's
// views, and the navigation that follows the session.

import { currentUser, isAdmin, logOut, onSessionChange, resume } from "./api.js";
import { fill, h, navigated, tell } from "./dom.js";
import { accountView, loginView, signupView } from "./account.js";
import { concertView } from "./concert.js";
import { editConcertView, newConcertView } from "./concert-form.js";
import { concertsView } from "./concerts.js";
import { reservationsView } from "./reservations.js";
import { saleView } from "./sale-view.js";
import { ticketsView } from "./tickets.js";
import { doorView } from "./door.js";

const ROUTES = [
  [/^\/$/, concertsView, "Concerts"],
  [/^\/login$/, loginView, "Log in"],
  [/^\/signup$/, signupView, "Sign up"],
  [/^\/concerts\/(?<id>\d+)$/, concertView, "Concert"],
  [/^\/me\/reservations$/, reservationsView, "My reservations"],
  [/^\/me\/tickets$/, ticketsView, "My tickets"],
  [/^\/me\/account$/, accountView, "My account"],
  [/^\/door$/, doorView, "Door"],
  [/^\/admin\/concerts\/new$/, newConcertView, "New concert"],
  [/^\/admin\/concerts\/(?<id>\d+)\/edit$/, editConcertView, "Edit concert"],
  [/^\/admin\/concerts\/(?<id>\d+)\/sale$/, saleView, "On sale"],
];

let leaving = null;

async function route() {
  if (leaving) leaving.abort();
  const controller = new AbortController();
  leaving = controller;
  const [path, search] = (location.hash.slice(1) || "/").split("?");
  const main = document.getElementById("main");
  const found = ROUTES.map(([pattern, view, title]) => [pattern.exec(path), view, title]).find(([match]) => match);
  if (!found) {
    fill(main, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the concerts")));
    return;
  }
  const [match, view, title] = found;
  document.title = `${title} · ticket box office`;
  try {
    delete main.dataset.view;
    await view(main, { params: match.groups || {}, query: new URLSearchParams(search || ""), signal: controller.signal });
    if (!controller.signal.aborted) {
      // Which page is on screen, once drawn (what a test waits for).
      main.dataset.view = location.hash || "#/";
      main.focus({ preventScroll: true });
    }
  } catch (e) {
    if (e.name === "AbortError" || controller.signal.aborted) return;
    fill(main, h("h1", {}, "Something went wrong"), h("p", {}, e.message), h("p", {}, h("a", { href: "#/" }, "Back to the concerts")));
  }
}

function nav() {
  const user = currentUser();
  const links = [h("a", { href: "#/" }, "Concerts")];
  if (user) {
    links.push(h("a", { href: "#/me/reservations" }, "My reservations"), h("a", { href: "#/me/tickets" }, "My tickets"));
    if (isAdmin()) links.push(h("a", { href: "#/admin/concerts/new" }, "New concert"));
    links.push(
      h("a", { href: "#/me/account", class: "who" }, `Signed in as ${user.nickName}`),
      h("button", {
        type: "button",
        class: "link",
        onclick: async () => {
          logOut();
          tell("You are logged out.", "info", { acrossNavigation: true });
          location.hash = "#/";
        },
      }, "Log out"),
    );
  } else {
    links.push(h("a", { href: "#/login" }, "Log in"), h("a", { href: "#/signup" }, "Sign up"));
  }
  fill(document.getElementById("nav"), links);
}

onSessionChange(nav);
window.addEventListener("hashchange", () => {
  navigated();
  route();
});
nav();
resume().finally(route);
