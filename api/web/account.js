// Signing up and logging in: one form, its problems shown in words; and
// one's account: the address mail goes to and the language it is written in.

import { Problem, api, currentUser, logIn, saveLanguage, signUp } from "./api.js";
import { field, fill, h, quiet } from "./dom.js";
import { LANGUAGES, language, t, useLanguage } from "./i18n.js";

const LABELS = { nickName: "account.nickname", password: "account.password", email: "account.email", currentPassword: "account.currentPassword" };

/** A problem's field messages in words, each under its field's label. */
function fieldMessages(e) {
  const fields = e instanceof Problem ? e.fields() : {};
  return Object.entries(fields).map(([name, message]) =>
    h("p", { class: "error" }, LABELS[name] ? t("account.field", { label: t(LABELS[name]), message }) : message),
  );
}

function emailInput(value) {
  return h("input", { name: "email", type: "email", autocomplete: "email", maxlength: 254, value: value || "" });
}

function accountForm(main, { signingUp, action }) {
  const nick = h("input", { name: "nickName", autocomplete: "username", required: true, maxlength: 50 });
  const password = h("input", {
    name: "password",
    type: "password",
    autocomplete: signingUp ? "new-password" : "current-password",
    required: true,
  });
  const email = signingUp ? emailInput() : null;
  const errors = h("div", { class: "form-errors", "aria-live": "polite" });
  const form = h(
    "form",
    {
      class: "narrow",
      onsubmit: async (event) => {
        event.preventDefault();
        fill(errors);
        const button = form.querySelector("button");
        button.disabled = true;
        try {
          await action(nick.value.trim(), password.value, email?.value.trim() || null);
          quiet();
          const next = new URLSearchParams(location.hash.split("?")[1] || "").get("next");
          location.hash = next && next.startsWith("#/") ? next : "#/";
        } catch (e) {
          fill(errors, h("p", { class: "error", role: "alert" }, e.message), fieldMessages(e));
          button.disabled = false;
        }
      },
    },
    h("h1", {}, t(signingUp ? "account.signupHeading" : "account.loginHeading")),
    field(t("account.nickname"), nick),
    field(t("account.password"), password),
    email ? field(t("account.emailOptional"), email) : null,
    errors,
    h("button", { type: "submit", class: "primary" }, t(signingUp ? "account.signupSubmit" : "account.loginSubmit")),
    h(
      "p",
      { class: "muted" },
      signingUp
        ? [t("account.haveAccount"), " ", h("a", { href: "#/login" }, t("nav.logIn"))]
        : [t("account.noAccount"), " ", h("a", { href: "#/signup" }, t("nav.signUp"))],
    ),
  );
  fill(main, form);
  nick.focus();
}

export function loginView(main) {
  accountForm(main, { signingUp: false, action: logIn });
}

export function signupView(main) {
  accountForm(main, { signingUp: true, action: signUp });
}

/** The language the page and the account's mail speak, saved as soon as chosen. */
function languageForm() {
  const select = h(
    "select",
    { name: "language" },
    Object.entries(LANGUAGES).map(([code, name]) => h("option", { value: code, lang: code, selected: code === language() }, name)),
  );
  const said = h("p", { class: "muted", role: "status" }, t("account.languageHint"));
  select.addEventListener("change", async () => {
    try {
      await saveLanguage(select.value);
      await useLanguage(select.value, { remember: true });
    } catch (e) {
      fill(said, h("span", { class: "error" }, e.message));
    }
  });
  return h("div", { class: "narrow" }, h("h2", {}, t("account.language")), field(t("account.language"), select), said);
}

/** One's account: the address the box office mails tickets and reminders
 * to, given, changed or removed with the current password. */
export async function accountView(main, { signal }) {
  const user = currentUser();
  if (!user) {
    location.hash = "#/login?next=%23%2Fme%2Faccount";
    return;
  }
  const me = await api("GET", "/api/users/me", undefined, { signal });
  const email = emailInput(me.email);
  const current = h("input", { name: "currentPassword", type: "password", autocomplete: "current-password", required: true });
  const said = h("div", { class: "form-errors", "aria-live": "polite" });
  const where = (address) => (address ? t("account.mailTo", { address }) : t("account.noMail"));
  const status = h("p", { class: "muted", "data-email": me.email || "" }, where(me.email));
  const form = h(
    "form",
    {
      class: "narrow",
      onsubmit: async (event) => {
        event.preventDefault();
        fill(said);
        const button = form.querySelector("button");
        button.disabled = true;
        try {
          const changed = await api("PATCH", `/api/users/${me.id}`, { email: email.value.trim() || null, currentPassword: current.value });
          current.value = "";
          status.dataset.email = changed.email || "";
          fill(status, where(changed.email));
          fill(said, h("p", { class: "ok", role: "status" }, t("account.saved")));
        } catch (e) {
          fill(said, h("p", { class: "error", role: "alert" }, e.message), fieldMessages(e));
        } finally {
          button.disabled = false;
        }
      },
    },
    h("h2", {}, t("account.mail")),
    status,
    field(t("account.emailEmptyNoMail"), email),
    field(t("account.currentPassword"), current),
    said,
    h("button", { type: "submit", class: "primary" }, t("account.save")),
  );
  fill(main, h("h1", {}, t("account.heading")), h("p", {}, t("account.signedInAs", { name: me.nickName })), form, languageForm());
}
