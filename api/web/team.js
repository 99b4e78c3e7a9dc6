// An organizer's team as each member's role shows it: the organizer
// switcher; invitations waiting for the caller's answer; for its owners,
// the members (role changed, removed), invitations made and taken back,
// and the desk's refund limit; for its owners and finance, the record of
// who did what, filtered and exported; and the organizer's concerts with
// the pages the caller's role opens on each.

import { api, downloadCsv, myInvitations, myOrganizers, refreshTeams, workFor, workingOrganizer } from "./api.js";
import { firstTab } from "./admin.js";
import { dateTime, field, fill, h, table, tell } from "./dom.js";
import { has, t } from "./i18n.js";

const ROLES = ["OWNER", "MANAGER", "BOX_OFFICE", "DOOR", "FINANCE"];

export async function teamView(main, { signal }) {
  const invitations = invitationsForYou(main, signal);
  const organizer = workingOrganizer(null);
  if (!organizer) {
    fill(main, h("h1", {}, t("team.heading")), invitations, myInvitations().length ? null : h("p", { class: "muted" }, t("team.noTeam")));
    return;
  }
  const sections = [h("h1", {}, t("team.headingOf", { name: organizer.name })), switcher(organizer), invitations, await concertsOf(organizer, signal)];
  if (organizer.permissions.includes("MANAGE_TEAM")) sections.push(await membersSection(organizer, signal, main));
  if (organizer.permissions.includes("READ_AUDIT")) sections.push(auditSection(organizer, signal));
  fill(main, ...sections);
}

/** Which organizer the page works for, when the caller works for several. */
function switcher(current) {
  const organizers = myOrganizers();
  if (organizers.length < 2) return null;
  const select = h(
    "select",
    { name: "organizer" },
    organizers.map((o) => h("option", { value: o.id, selected: o.id === current.id }, o.name)),
  );
  select.addEventListener("change", () => {
    workFor(select.value);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  return h("div", { class: "narrow switcher" }, field(t("team.workingFor"), select));
}

/** The caller's invitations, each accepted or declined here. */
function invitationsForYou(main, signal) {
  const waiting = myInvitations();
  if (!waiting.length) return null;
  const answer = (invitation, how) => async () => {
    try {
      await api("POST", `/api/invitations/${invitation.id}/${how}`);
      if (how === "accept") workFor(invitation.organizerId);
      await refreshTeams();
      tell(t(how === "accept" ? "team.joined" : "team.declined", { name: invitation.organizerName }), "info", { acrossNavigation: true });
      await teamView(main, { signal });
    } catch (e) {
      tell(e.message);
    }
  };
  return h(
    "section",
    { class: "invitations", "aria-labelledby": "invited-heading" },
    h("h2", { id: "invited-heading" }, t("team.invitedHeading")),
    waiting.map((i) =>
      h(
        "p",
        { class: "invitation", "data-invitation": i.id },
        t("team.invitedAs", { name: i.organizerName, role: t(`role.${i.role}`) }),
        " ",
        h("button", { type: "button", class: "primary", onclick: answer(i, "accept") }, t("team.accept")),
        " ",
        h("button", { type: "button", onclick: answer(i, "decline") }, t("team.decline")),
      ),
    ),
  );
}

/** The organizer's concerts, each with the first page the caller's role opens there. */
async function concertsOf(organizer, signal) {
  const list = await api("GET", `/api/concerts?organizerId=${organizer.id}&size=100`, undefined, { signal });
  const rows = list.content
    .filter((c) => firstTab(c))
    .map((c) => h("li", { "data-concert": c.id }, h("a", { href: firstTab(c) }, c.title), ` · ${c.venue}`));
  return h(
    "section",
    { "aria-labelledby": "team-concerts" },
    h("h2", { id: "team-concerts" }, t("team.concerts")),
    rows.length ? h("ul", { class: "team-concerts" }, rows) : h("p", { class: "muted" }, t("team.noConcerts")),
    organizer.permissions.includes("EDIT_CONCERTS") && organizer.concertIds === null
      ? h("p", {}, h("a", { class: "button", href: "#/admin/concerts/new" }, t("concerts.new")))
      : null,
  );
}

/** The members and their roles, invitations, and the desk's refund limit (owners). */
async function membersSection(organizer, signal, main) {
  const base = `/api/organizers/${organizer.id}`;
  const [members, invitations] = await Promise.all([
    api("GET", `${base}/members`, undefined, { signal }),
    api("GET", `${base}/invitations`, undefined, { signal }),
  ]);
  const again = () => teamView(main, { signal });
  const act = (work, done) => async () => {
    try {
      await work();
      tell(done, "info");
      await again();
    } catch (e) {
      tell(e.message);
    }
  };
  const memberRows = members.map((m) => {
    const role = h("select", { name: `role-${m.userId}`, "aria-label": t("team.roleOf", { name: m.nickName }) }, ROLES.map((r) => h("option", { value: r, selected: r === m.role }, t(`role.${r}`))));
    role.addEventListener("change", act(() => api("PUT", `${base}/members/${m.userId}`, { role: role.value, concertIds: m.concertIds || [] }), t("team.roleChanged", { name: m.nickName })));
    const remove = h("button", { type: "button", class: "danger", onclick: act(() => api("DELETE", `${base}/members/${m.userId}`), t("team.removed", { name: m.nickName })) }, t("team.remove"));
    return h("tr", { "data-member": m.userId }, h("td", {}, m.nickName), h("td", {}, role), h("td", {}, m.concertIds ? t("team.someConcerts", { count: m.concertIds.length }) : t("team.allConcerts")), h("td", {}, remove));
  });
  const who = h("input", { name: "invitee", required: true, maxlength: 254, autocomplete: "off" });
  const role = h("select", { name: "inviteRole" }, ROLES.map((r) => h("option", { value: r }, t(`role.${r}`))));
  const invite = h("form", { class: "narrow", "aria-labelledby": "invite-heading" }, h("h3", { id: "invite-heading" }, t("team.invite")), field(t("team.inviteWho"), who), field(t("team.inviteRole"), role), h("button", { type: "submit", class: "primary" }, t("team.inviteButton")));
  invite.addEventListener("submit", (event) => {
    event.preventDefault();
    const named = who.value.trim();
    const body = named.includes("@") ? { email: named, role: role.value } : { nickName: named, role: role.value };
    act(() => api("POST", `${base}/invitations`, body), t("team.invited", { name: named }))();
  });
  const pending = invitations
    .filter((i) => i.status === "PENDING")
    .map((i) => h("tr", { "data-invitation": i.id }, h("td", {}, i.nickName), h("td", {}, t(`role.${i.role}`)), h("td", {}, h("button", { type: "button", onclick: act(() => api("DELETE", `${base}/invitations/${i.id}`), t("team.takenBack", { name: i.nickName })) }, t("team.takeBack")))));
  const limit = h("input", { name: "deskRefundLimit", type: "number", min: 0, step: 1, value: organizer.deskRefundLimit ?? "" });
  const limits = h("form", { class: "narrow" }, field(t("team.deskRefundLimit"), limit), h("button", { type: "submit" }, t("team.save")));
  limits.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = limit.value === "" ? null : Number(limit.value);
    act(async () => {
      await api("PATCH", base, { deskRefundLimit: value });
      await refreshTeams();
    }, t("team.saved"))();
  });
  return h(
    "section",
    { "aria-labelledby": "members-heading" },
    h("h2", { id: "members-heading" }, t("team.members")),
    table(["team.nameColumn", "team.roleColumn", "team.concertsColumn", "team.actionsColumn"], memberRows),
    invite,
    pending.length ? table(["team.nameColumn", "team.roleColumn", "team.actionsColumn"], pending) : null,
    limits,
  );
}

/** Who did what: filters, the latest entries, and the same as CSV. */
function auditSection(organizer, signal) {
  const inputs = {
    action: h("input", { name: "action", maxlength: 64 }),
    from: h("input", { name: "from", type: "date" }),
    to: h("input", { name: "to", type: "date" }),
  };
  const results = h("div", { class: "audit-entries", "aria-live": "polite" });
  const query = () => {
    const q = new URLSearchParams();
    if (inputs.action.value.trim()) q.set("action", inputs.action.value.trim());
    if (inputs.from.value) q.set("from", `${inputs.from.value}T00:00:00Z`);
    if (inputs.to.value) q.set("to", `${inputs.to.value}T23:59:59Z`);
    return q.toString();
  };
  const path = () => `/api/organizers/${organizer.id}/audit?${query()}`;
  const show = async () => {
    try {
      const entries = await api("GET", path(), undefined, { signal });
      const rows = entries.map((e) =>
        h("tr", { "data-entry": e.id, "data-action": e.action }, h("td", {}, dateTime(e.at)), h("td", {}, e.nickName ?? "–"), h("td", {}, t(`role.${e.role}`)), h("td", {}, said(e.action)), h("td", {}, target(e.target))),
      );
      fill(results, rows.length ? table(["audit.when", "audit.who", "audit.role", "audit.action", "audit.target"], rows) : h("p", { class: "muted" }, t("audit.none")));
    } catch (e) {
      if (e.name !== "AbortError") tell(e.message);
    }
  };
  const form = h("form", { class: "filters" }, field(t("audit.action"), inputs.action), field(t("audit.from"), inputs.from), field(t("audit.to"), inputs.to), h("button", { type: "submit" }, t("audit.filter")), " ", h("button", { type: "button", onclick: () => downloadCsv(path(), `audit-${organizer.slug}.csv`).catch((e) => tell(e.message)) }, t("audit.csv")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    show();
  });
  show();
  return h("section", { "aria-labelledby": "audit-heading" }, h("h2", { id: "audit-heading" }, t("audit.heading")), form, results);
}

/** A recorded action in words (an action the page does not know yet: as recorded). */
function said(action) {
  return has(`audit.did.${action}`) ? t(`audit.did.${action}`) : action;
}

/** "reservation 12" in words: "order 12". */
function target(recorded) {
  if (!recorded) return "";
  const [, kind, id] = /^(.*) (\d+)$/.exec(recorded) || [];
  return kind && has(`audit.of.${kind}`) ? t(`audit.of.${kind}`, { id }) : recorded;
}
