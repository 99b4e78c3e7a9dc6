// What only the box office's operators (admins) see.

import { isAdmin } from "./api.js";
import { fill, h } from "./dom.js";

/** Shows "operators only" and answers true unless the caller is an admin. */
export function adminOnly(main) {
  if (isAdmin()) return false;
  fill(main, h("h1", {}, "Operators only"), h("p", {}, "This page is for the box office's operators. ", h("a", { href: "#/login" }, "Log in"), " with an operator account."));
  return true;
}
