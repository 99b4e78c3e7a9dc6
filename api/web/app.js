// The box office's page: a hash router over the buyer's and the operator's
// views, and the header that follows the session. A view's code is loaded
// when it is first shown, so a fan's visit loads no operator's code.

import { canSomewhere, currentUser, isAdmin, logOut, myInvitations, myOrganizers, onSessionChange, resume, saveLanguage } from "./api.js";
import { fill, h, navigated, tell } from "./dom.js";
import { LANGUAGES, chosenHere, language, t, useLanguage, useWords, wantedLanguage } from "./i18n.js";

const view = (module, name) => () => import(module).then((m) => m[name]);
/** An operator's (or the door's) view: its words come in a part of their own. */
const operatorView = (module, name) => () => Promise.all([import(module), useWords("operator")]).then(([m]) => m[name]);

const ROUTES = [
  [/^\/$/, view("./concerts.js", "concertsView"), "title.concerts"],
  [/^\/login$/, view("./account.js", "loginView"), "title.login"],
  [/^\/signup$/, view("./account.js", "signupView"), "title.signup"],
  [/^\/concerts\/(?<id>\d+)$/, view("./concert.js", "concertView"), "title.concert"],
  [/^\/me\/reservations$/, view("./reservations.js", "reservationsView"), "title.reservations"],
  [/^\/me\/tickets$/, view("./tickets.js", "ticketsView"), "title.tickets"],
  [/^\/orders\/(?<id>\d+)\/tickets$/, operatorView("./tickets.js", "orderTicketsView"), "title.tickets"],
  [/^\/me\/account$/, view("./account.js", "accountView"), "title.account"],
  [/^\/door$/, operatorView("./door.js", "doorView"), "title.door"],
  [/^\/admin\/concerts\/new$/, operatorView("./concert-form.js", "newConcertView"), "title.newConcert"],
  [/^\/admin\/concerts\/(?<id>\d+)\/edit$/, operatorView("./concert-form.js", "editConcertView"), "title.editConcert"],
  [/^\/admin\/concerts\/(?<id>\d+)\/sale$/, operatorView("./sale-view.js", "saleView"), "title.sale"],
  [/^\/admin\/concerts\/(?<id>\d+)\/codes$/, operatorView("./access-codes.js", "accessCodesView"), "title.codes"],
  [/^\/admin\/concerts\/(?<id>\d+)\/scanners$/, operatorView("./scanners.js", "scannersView"), "title.scanners"],
  [/^\/admin\/concerts\/(?<id>\d+)\/waiting-list$/, operatorView("./waiting-admin.js", "waitingListView"), "title.waitingList"],
  [/^\/admin\/concerts\/(?<id>\d+)\/desk$/, operatorView("./desk.js", "deskView"), "title.desk"],
  [/^\/admin\/concerts\/(?<id>\d+)\/orders$/, operatorView("./void-orders.js", "voidOrdersView"), "title.voidOrders"],
  [/^\/team$/, operatorView("./team.js", "teamView"), "title.team"],
];

let leaving = null;

async function route() {
  if (leaving) leaving.abort();
  const controller = new AbortController();
  leaving = controller;
  closeMenu();
  const [path, search] = (location.hash.slice(1) || "/").split("?");
  const main = document.getElementById("main");
  const found = ROUTES.map(([pattern, load, title]) => [pattern.exec(path), load, title]).find(([match]) => match);
  if (!found) {
    fill(main, h("h1", {}, t("app.notFound")), h("p", {}, h("a", { href: "#/" }, t("app.backToConcerts"))));
    return;
  }
  const [match, load, title] = found;
  document.title = t("app.documentTitle", { page: t(title) });
  try {
    delete main.dataset.view;
    const show = await load();
    if (controller.signal.aborted) return;
    await show(main, { params: match.groups || {}, query: new URLSearchParams(search || ""), signal: controller.signal });
    if (!controller.signal.aborted) {
      // Which page is on screen, once drawn (what a test waits for).
      main.dataset.view = location.hash || "#/";
      main.focus({ preventScroll: true });
    }
  } catch (e) {
    if (e.name === "AbortError" || controller.signal.aborted) return;
    fill(main, h("h1", {}, t("app.wentWrong")), h("p", {}, e.message), h("p", {}, h("a", { href: "#/" }, t("app.backToConcerts"))));
  }
}

/** The language switch: the other languages, each named in itself. */
function languageSwitch() {
  return Object.entries(LANGUAGES)
    .filter(([code]) => code !== language())
    .map(([code, name]) =>
      h("button", {
        type: "button",
        class: "link language",
        lang: code,
        "data-language": code,
        onclick: async () => {
          await useLanguage(code, { remember: true });
          if (currentUser()) saveLanguage(code).catch(() => tell(t("app.languageNotSaved"), "info"));
        },
      }, name),
    );
}

function closeMenu() {
  const toggle = document.getElementById("menu-toggle");
  if (toggle) toggle.setAttribute("aria-expanded", "false");
}

function nav() {
  const user = currentUser();
  const links = [h("a", { href: "#/" }, t("nav.concerts"))];
  if (user) {
    links.push(h("a", { href: "#/me/reservations" }, t("nav.reservations")), h("a", { href: "#/me/tickets" }, t("nav.tickets")));
    if (canSomewhere("EDIT_CONCERTS")) links.push(h("a", { href: "#/admin/concerts/new" }, t("nav.newConcert")));
    if (isAdmin() || myOrganizers().length || myInvitations().length) links.push(h("a", { href: "#/team" }, t("nav.team")));
    links.push(
      h("a", { href: "#/me/account", class: "who" }, t("nav.signedInAs", { name: user.nickName })),
      h("button", {
        type: "button",
        class: "link",
        onclick: async () => {
          logOut();
          tell(t("nav.loggedOut"), "info", { acrossNavigation: true });
          location.hash = "#/";
        },
      }, t("nav.logOut")),
    );
  } else {
    links.push(h("a", { href: "#/login" }, t("nav.logIn")), h("a", { href: "#/signup" }, t("nav.signUp")));
  }
  // The door: for operators, and on a device paired as a door.
  if (canSomewhere("CHECK_IN") || pairedDoor()) links.splice(1, 0, h("a", { href: "#/door" }, t("nav.door")));
  links.push(...languageSwitch());
  const toggle = document.getElementById("menu-toggle");
  fill(toggle, t("nav.menu"));
  fill(document.getElementById("nav"), links);
  document.getElementById("nav").setAttribute("aria-label", t("nav.label"));
}

/** Whether this browser is paired as a door (door.js keeps its pairing under "ticket_door"). */
function pairedDoor() {
  try {
    return Boolean(JSON.parse(localStorage.getItem("ticket_door"))?.token);
  } catch {
    return false;
  }
}

/** The page's fixed words, then the view, in the language now spoken. */
function paint() {
  fill(document.querySelector(".skip"), t("app.skip"));
  nav();
  route();
}

function menu() {
  const toggle = document.getElementById("menu-toggle");
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    if (open) document.querySelector("#nav a, #nav button")?.focus();
  });
}

async function start() {
  await useLanguage(wantedLanguage());
  menu();
  window.addEventListener("ticket:language", paint);
  onSessionChange((user) => {
    // The account's language, when the switch has not chosen one here.
    if (user?.language && user.language !== language() && !chosenHere()) {
      useLanguage(user.language);
    } else {
      nav();
    }
  });
  window.addEventListener("hashchange", () => {
    navigated();
    // A door paired on the last view is linked from now on.
    nav();
    route();
  });
  fill(document.querySelector(".skip"), t("app.skip"));
  nav();
  await resume();
  // A device paired as a door opens on the door.
  if (!location.hash && pairedDoor()) history.replaceState(null, "", "#/door");
  route();
}

start();
