// The door: a scanner's page. A code typed, pasted or read by the camera
// gets a green or red answer with the seat. Online, the server decides
// (exactly once); without network the page verifies the code itself
// against the keys and revoked list it last read (README, "Ticket codes"),
// keeps what it let in, and uploads it when the network is back, showing
// any ticket someone else let in too.
// Long because online and offline checks, the pairing and the camera share
// the door's one stored state.

import { clockAt, field, fill, h, when } from "./dom.js";
import { t } from "./i18n.js";

const STORE = "ticket_door";
const SYNC_EVERY_MS = 2000;
const REFRESH_EVERY_MS = 30000;

class Offline extends Error {}

/** Seat id → number, from a seat map (its runs of ids in natural order). */
function seatNumbersOf(map) {
  const numbers = new Map();
  let i = 0;
  for (const [first, count] of map.idRanges) {
    for (let k = 0; k < count; k += 1) numbers.set(first + k, map.seatNumbers[i++]);
  }
  return numbers;
}

function load() {
  try {
    return JSON.parse(localStorage.getItem(STORE)) || {};
  } catch {
    return {};
  }
}

export async function doorView(main, { signal }) {
  const door = new Door(load(), main, signal);
  door.render();
  if (door.ready()) await door.refresh().catch(() => {});
  door.start();
}

class Door {
  constructor(state, main, signal) {
    this.s = { revoked: [], admitted: [], pending: [], conflicts: [], keys: [], ...state };
    this.main = main;
    this.signal = signal;
    this.offline = false;
    this.verifiers = new Map();
    // What a benchmark or a curious operator may call: the offline check.
    window.ticketDoor = { verifyLocally: (code) => this.verifyLocally(code) };
  }

  ready() {
    return Boolean(this.s.concertId && this.s.token && this.s.gate);
  }

  save() {
    localStorage.setItem(STORE, JSON.stringify(this.s));
  }

  start() {
    const sync = setInterval(() => this.sync(), SYNC_EVERY_MS);
    const refresh = setInterval(() => this.refresh().catch(() => {}), REFRESH_EVERY_MS);
    const online = () => this.sync();
    window.addEventListener("online", online);
    this.signal.addEventListener("abort", () => {
      clearInterval(sync);
      clearInterval(refresh);
      window.removeEventListener("online", online);
    });
  }

  async call(method, path, body) {
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: { Authorization: `Bearer ${this.s.token}`, Accept: "application/json", ...(body ? { "Content-Type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        cache: "no-store",
      });
    } catch {
      throw new Offline();
    }
    const data = await response.json().catch(() => null);
    return { status: response.status, data };
  }

  /** The keys and the tickets cancelled since the last read. */
  async refresh() {
    const keys = await this.call("GET", `/api/concerts/${this.s.concertId}/check-in/keys`);
    if (keys.status === 200) this.s.keys = keys.data.keys;
    const since = this.s.asOf ? `?since=${encodeURIComponent(this.s.asOf)}` : "";
    const revoked = await this.call("GET", `/api/concerts/${this.s.concertId}/check-in/revoked${since}`);
    // The concert by its name, kept for the offline hours.
    if (!this.s.concert) {
      const concert = await this.call("GET", `/api/concerts/${this.s.concertId}`);
      if (concert.status === 200) {
        const { title, venue, concertDate, timeZone, timeZoneNames } = concert.data;
        this.s.concert = { title, venue, concertDate, timeZone, timeZoneNames };
        if (this.concertName) fill(this.concertName, concertLine(this.s));
      }
    }
    if (!this.seatNumbers) {
      const map = await this.call("GET", `/api/concerts/${this.s.concertId}/seat-map`);
      if (map.status === 200) this.seatNumbers = seatNumbersOf(map.data);
    }
    if (revoked.status === 200) {
      this.s.revoked = [...new Set([...this.s.revoked, ...revoked.data.revoked])];
      this.s.asOf = revoked.data.asOf;
    } else if (revoked.status === 401 || revoked.status === 403) {
      this.show(false, t("door.tokenInvalid"), t("door.askForNew"));
    }
    this.save();
    this.setOffline(false);
  }

  setOffline(offline) {
    this.offline = offline;
    this.renderStatus();
  }

  async scan(raw) {
    const code = raw.trim();
    if (!code) return;
    if (!this.offline) {
      try {
        const answer = await this.call("POST", "/api/check-ins", { code, gate: this.s.gate });
        this.onlineVerdict(answer, code);
        return;
      } catch (e) {
        if (!(e instanceof Offline)) throw e;
        this.setOffline(true);
      }
    }
    await this.offlineScan(code);
  }

  onlineVerdict({ status, data }, code) {
    if (status === 200) {
      this.remember(data.ticketId);
      this.show(true, t("door.admitted", { seat: data.seatNumber }), [data.category, data.holder].filter(Boolean).join(" · "));
    } else if (status === 409) {
      const at = data?.checkedInAt ? clockAt(data.checkedInAt, this.s.concert?.timeZone) : "";
      this.show(false, t("door.already"), t(data?.gate ? "door.alreadyAtGate" : "door.alreadyAt", { time: at, gate: data?.gate }));
    } else if (status === 410) {
      this.show(false, t("door.cancelled"), t("door.sendToBoxOffice"));
    } else if (status === 400) {
      this.show(false, t("door.notATicket"), code.slice(0, 24));
    } else {
      this.show(false, t("door.noAnswer"), t("problem.unknown", { status }));
    }
  }

  remember(ticketId) {
    if (!this.s.admitted.includes(ticketId)) this.s.admitted.push(ticketId);
    this.save();
  }

  async offlineScan(code) {
    const ticket = await this.verifyLocally(code);
    if (!ticket) {
      this.show(false, t("door.notATicket"), t("door.doesNotVerify"));
    } else if (this.s.revoked.includes(ticket.ticketId)) {
      this.show(false, t("door.cancelled"), t("door.cancelledOffline"));
    } else if (this.s.admitted.includes(ticket.ticketId)) {
      this.show(false, t("door.already"), t("door.alreadyHere"));
    } else {
      this.remember(ticket.ticketId);
      const id = crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;
      this.s.pending.push({ scanId: id, code, gate: this.s.gate, scannedAt: new Date().toISOString() });
      this.save();
      const seat = this.seatNumbers?.get(ticket.seatId) || `#${ticket.seatId}`;
      this.show(true, t("door.admitted", { seat }), t("door.checkedOffline"));
    }
    this.renderStatus();
  }

  /** The ticket a code names, if one of the concert's keys signed it. */
  async verifyLocally(code) {
    let bytes;
    try {
      bytes = Uint8Array.from(atob(code.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    } catch {
      return null;
    }
    if (bytes.length !== 97 || bytes[0] !== 1) return null;
    const kid = [...bytes.slice(1, 5)].map((b) => b.toString(16).padStart(2, "0")).join("");
    const key = await this.verifier(kid);
    if (!key) return null;
    const valid = await crypto.subtle.verify({ name: "Ed25519" }, key, bytes.slice(33), bytes.slice(0, 33));
    if (!valid) return null;
    const view = new DataView(bytes.buffer);
    const ticket = {
      ticketId: Number(view.getBigUint64(5)),
      concertId: Number(view.getBigUint64(13)),
      seatId: Number(view.getBigUint64(21)),
      version: view.getUint32(29),
    };
    return ticket.concertId === Number(this.s.concertId) ? ticket : null;
  }

  async verifier(kid) {
    if (this.verifiers.has(kid)) return this.verifiers.get(kid);
    const key = this.s.keys.find((k) => k.kid === kid);
    if (!key) return null;
    const raw = Uint8Array.from(atob(key.publicKey.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    const imported = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
    this.verifiers.set(kid, imported);
    return imported;
  }

  /** Uploads what was let in offline; then the page is online again. */
  async sync() {
    if (!this.ready()) return;
    try {
      if (this.s.pending.length) {
        const scans = this.s.pending.slice(0, 1000);
        const answer = await this.call("POST", "/api/check-ins/batch", { scans });
        if (answer.status !== 200) return;
        const sent = new Set(scans.map((s) => s.scanId));
        this.s.pending = this.s.pending.filter((s) => !sent.has(s.scanId));
        for (const conflict of answer.data.conflicts) {
          this.s.conflicts = this.s.conflicts.filter((c) => c.ticketId !== conflict.ticketId);
          this.s.conflicts.push(conflict);
        }
        this.save();
      }
      if (this.offline) await this.refresh();
      this.renderStatus();
    } catch (e) {
      if (e instanceof Offline) this.setOffline(true);
    }
  }

  show(admitted, headline, detail) {
    fill(
      this.verdict,
      h("p", { class: "verdict-headline" }, admitted ? "✓ " : "✗ ", headline),
      detail ? h("p", {}, detail) : null,
    );
    this.verdict.className = `verdict ${admitted ? "ok" : "no"}`;
  }

  renderStatus() {
    if (!this.status) return;
    const waiting = this.s.pending.length;
    fill(
      this.status,
      this.offline ? h("p", { class: "offline-banner", role: "status" }, t("door.offline")) : null,
      h("p", { class: "pending" }, t("door.waiting", { count: waiting })),
      this.s.conflicts.length
        ? h(
            "div",
            { class: "conflicts" },
            h("h2", {}, t("door.twice")),
            h(
              "ul",
              {},
              this.s.conflicts.map((c) =>
                h("li", { "data-ticket": c.ticketId }, t("door.twiceTicket", { ticket: String(c.ticketId), scans: c.scans.map((s) => `${s.gate} ${clockAt(s.scannedAt, this.s.concert?.timeZone)}`).join(", ") })),
              ),
            ),
          )
        : null,
    );
  }

  render() {
    if (!this.ready()) {
      this.renderSetup();
      return;
    }
    const input = h("input", { name: "code", autocomplete: "off", spellcheck: "false", placeholder: t("door.codePlaceholder"), "aria-label": t("door.code") });
    const form = h("form", { class: "door-scan" }, input, h("button", { type: "submit", class: "primary" }, t("door.check")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const code = input.value;
      input.value = "";
      await this.scan(code);
      input.focus();
    });
    this.verdict = h("div", { class: "verdict", "aria-live": "assertive" }, h("p", { class: "muted" }, t("door.ready")));
    this.status = h("div", { class: "door-status", "aria-live": "polite" });
    fill(
      this.main,
      h("h1", {}, t("door.heading", { gate: this.s.gate })),
      h("p", { class: "muted" }, (this.concertName = h("span", { class: "door-concert" }, concertLine(this.s))), " ", h("button", { type: "button", class: "link", onclick: () => this.reset() }, t("door.change"))),
      form,
      this.camera(),
      this.verdict,
      this.status,
    );
    this.renderStatus();
    input.focus();
  }

  /**
   * The camera; `onCode` hears each code read (else it is scanned). QR
   * codes are read by the browser's own BarcodeDetector where it has one,
   * else by ZXing in a worker (`qr-worker.js`), loaded only here.
   */
  camera(onCode = (code) => this.scan(code)) {
    if (!navigator.mediaDevices?.getUserMedia) return null;
    const video = h("video", { class: "door-camera", muted: true, playsinline: true, hidden: true });
    const button = h("button", { type: "button" }, t("door.camera"));
    const said = h("p", { class: "field-error", role: "alert", hidden: true });
    button.addEventListener("click", async () => {
      button.disabled = true;
      let stream;
      try {
        stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } });
      } catch {
        button.disabled = false;
        said.hidden = false;
        fill(said, t("door.noCamera"));
        return;
      }
      said.hidden = true;
      button.hidden = true;
      video.hidden = false;
      video.srcObject = stream;
      await video.play();
      const read = qrReader();
      let last = "";
      const look = async () => {
        if (this.signal.aborted || !video.isConnected) {
          stream.getTracks().forEach((track) => track.stop());
          read.stop();
          return;
        }
        const code = await read(video);
        if (code && code !== last) {
          last = code;
          await onCode(code);
        }
        requestAnimationFrame(look);
      };
      look();
    });
    return h("div", { class: "door-camera-wrap" }, button, said, video);
  }

  renderSetup() {
    const pairing = h("input", { name: "pairingCode", required: true, autocomplete: "off", spellcheck: "false", placeholder: "ticket-door:1:…" });
    const gate = h("input", { name: "gate", required: true, maxlength: 40, value: this.s.gate || "" });
    const said = h("p", { class: "field-error", role: "alert", hidden: true });
    const form = h(
      "form",
      { class: "narrow door-setup" },
      field(t("door.pairingCode"), pairing),
      h("small", { class: "hint" }, t("door.pairingHint")),
      field(t("door.gate"), gate),
      said,
      h("button", { type: "submit", class: "primary" }, t("door.start")),
    );
    const pair = async (text) => {
      const paired = pairingOf(text);
      if (!paired || !gate.value.trim()) {
        said.hidden = false;
        fill(said, t(paired ? "door.gateFirst" : "door.notPairing"));
        (paired ? gate : pairing).focus();
        return;
      }
      this.s = { revoked: [], admitted: [], pending: [], conflicts: [], keys: [], ...paired, gate: gate.value.trim() };
      this.save();
      this.render();
      await this.refresh().catch(() => this.setOffline(true));
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      pair(pairing.value);
    });
    fill(this.main, h("h1", {}, t("title.door")), h("p", {}, t("door.setUp")), form, this.camera((code) => pair(code)));
  }

  reset() {
    if (this.s.pending.length && !confirm(t("door.forget"))) return;
    localStorage.removeItem(STORE);
    this.s = { revoked: [], admitted: [], pending: [], conflicts: [], keys: [] };
    this.render();
  }
}

/** The concert a door works: its title, venue and time once read. */
function concertLine(s) {
  if (!s.concert) return t("door.concertNumber", { id: String(s.concertId) });
  return `${s.concert.title} · ${s.concert.venue} · ${when(s.concert, "concertDate")}.`;
}

/** A scanner's pairing code ("ticket-door:1:{concert}:{token}") as the door keeps it, or null. */
function pairingOf(text) {
  const match = /^ticket-door:1:(\d+):(\S+)$/.exec(text.trim());
  return match ? { concertId: match[1], token: match[2] } : null;
}

/**
 * `read(video)`: the QR code in the video's frame now, or null; the
 * browser's own detector, else ZXing in a worker. `read.stop()` ends it.
 */
function qrReader() {
  if ("BarcodeDetector" in window) {
    const detector = new window.BarcodeDetector({ formats: ["qr_code"] });
    const read = async (video) => (await detector.detect(video).catch(() => []))[0]?.rawValue ?? null;
    read.stop = () => {};
    return read;
  }
  const worker = new Worker("/assets/qr-worker.js", { type: "module" });
  const canvas = document.createElement("canvas");
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const read = (video) => {
    if (!video.videoWidth) return Promise.resolve(null);
    // A frame at most 640 px wide is plenty for a code held up to a phone.
    const scale = Math.min(1, 640 / video.videoWidth);
    canvas.width = Math.round(video.videoWidth * scale);
    canvas.height = Math.round(video.videoHeight * scale);
    context.drawImage(video, 0, 0, canvas.width, canvas.height);
    const frame = context.getImageData(0, 0, canvas.width, canvas.height);
    return new Promise((resolve) => {
      worker.onmessage = ({ data }) => resolve(data);
      worker.onerror = () => resolve(null);
      worker.postMessage(frame, [frame.data.buffer]);
    });
  };
  read.stop = () => worker.terminate();
  return read;
}
