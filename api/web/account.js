// Signing up and logging in: one form, its problems shown in words.

import { Problem, logIn, signUp } from "./api.js";
import { field, fill, h, quiet } from "./dom.js";

function accountForm(main, { heading, submit, action, other }) {
  const nick = h("input", { name: "nickName", autocomplete: "username", required: true, maxlength: 50 });
  const password = h("input", {
    name: "password",
    type: "password",
    autocomplete: heading === "Sign up" ? "new-password" : "current-password",
    required: true,
  });
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
          await action(nick.value.trim(), password.value);
          quiet();
          const next = new URLSearchParams(location.hash.split("?")[1] || "").get("next");
          location.hash = next && next.startsWith("#/") ? next : "#/";
        } catch (e) {
          const fields = e instanceof Problem ? e.fields() : {};
          const messages = Object.entries(fields).map(([name, message]) => `${name === "nickName" ? "Nickname" : "Password"}: ${message}`);
          fill(errors, h("p", { class: "error", role: "alert" }, e.message), messages.map((m) => h("p", { class: "error" }, m)));
          button.disabled = false;
        }
      },
    },
    h("h1", {}, heading),
    field("Nickname", nick),
    field("Password", password),
    errors,
    h("button", { type: "submit" }, submit),
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
