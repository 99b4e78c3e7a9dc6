// Signing up and logging in: one form, its problems shown in words; and
// one's account: the address mail goes to.

import { Problem, api, currentUser, logIn, signUp } from "./api.js";
import { field, fill, h, quiet } from "./dom.js";

const FIELD_NAMES = { nickName: "Nickname", password: "Password", email: "Email", currentPassword: "Current password" };

/** A problem's field messages in words, each under its field's name. */
function fieldMessages(e) {
  const fields = e instanceof Problem ? e.fields() : {};
  return Object.entries(fields).map(([name, message]) => h("p", { class: "error" }, `${FIELD_NAMES[name] || name}: ${message}`));
}

function emailInput(value) {
  return h("input", { name: "email", type: "email", autocomplete: "email", maxlength: 254, value: value || "" });
}

function accountForm(main, { heading, submit, action, other }) {
  const nick = h("input", { name: "nickName", autocomplete: "username", required: true, maxlength: 50 });
  const password = h("input", {
    name: "password",
    type: "password",
    autocomplete: heading === "Sign up" ? "new-password" : "current-password",
    required: true,
  });
  const signingUp = heading === "Sign up";
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
    h("h1", {}, heading),
    field("Nickname", nick),
    field("Password", password),
    email ? field("Email (optional: where we mail your tickets)", email) : null,
    errors,
    h("button", { type: "submit", class: "primary" }, submit),
    h("p", { class: "muted" }, other),
  );
  fill(main, form);
  nick.focus();
}

export function loginView(main) {
  accountForm(main, {
    heading: "Log in",
    submit: "Log in",
    action: logIn,
    other: ["No account yet? ", h("a", { href: "#/signup" }, "Sign up")],
  });
}

export function signupView(main) {
  accountForm(main, {
    heading: "Sign up",
    submit: "Create account",
    action: signUp,
    other: ["Already have an account? ", h("a", { href: "#/login" }, "Log in")],
  });
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
  const where = (address) => (address ? `Mail goes to ${address}.` : "No address: the box office sends you no mail.");
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
          fill(said, h("p", { class: "ok", role: "status" }, "Saved."));
        } catch (e) {
          fill(said, h("p", { class: "error", role: "alert" }, e.message), fieldMessages(e));
        } finally {
          button.disabled = false;
        }
      },
    },
    h("h2", {}, "Mail"),
    status,
    field("Email (empty: no mail)", email),
    field("Current password", current),
    said,
    h("button", { type: "submit", class: "primary" }, "Save"),
  );
  fill(main, h("h1", {}, "My account"), h("p", {}, `Signed in as ${me.nickName}.`), form);
}
