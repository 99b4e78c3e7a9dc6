// A price in work for standing in line: when a concert asks for a proof of
// work, the page solves an ALTCHA challenge before each request goes in
// line, with ALTCHA's own widget (npm `altcha`, its strict-CSP build,
// served from /assets; see scripts/vendor-altcha.sh) hashing in Web Workers
// so that the page stays responsive, and a line that says how long it has
// been working.

import { api } from "./api.js";
import { fill, h } from "./dom.js";
import { locale, t } from "./i18n.js";

let loading = null;

/** The widget's module, loaded once and only by pages that need it. */
function widgetReady() {
  if (!loading) document.head.append(h("link", { rel: "stylesheet", href: "/assets/altcha.css" }));
  loading ||= import("./altcha.js").then(() => {
    // The strict-CSP build carries no workers (they would be inline blobs):
    // the algorithm our challenges use is registered with a worker served
    // from our own origin, which the page's CSP allows.
    globalThis.$altcha.algorithms.set("SHA-256", () => new Worker("/assets/altcha-sha-worker.js"));
    return customElements.whenDefined("altcha-widget");
  });
  return loading;
}

export class ProofOfWork {
  constructor(concertId) {
    this.concertId = concertId;
    this.widget = h("altcha-widget", { auto: "off", name: "proofOfWork" });
    this.progress = h("p", { class: "pow-progress muted", "aria-live": "polite" });
    // Shown from the first solve on: before it, the widget's checkbox
    // would invite a click that has no challenge to solve.
    this.element = h("div", { class: "proof-of-work", hidden: true }, this.widget, this.progress);
  }

  /**
   * Solves a fresh challenge for this concert (the element must be on the
   * page) and resolves with the value of the request's `Proof-Of-Work`
   * header. A challenge is good for one request and a minute, so each
   * request solves its own.
   */
  async solve(signal) {
    await widgetReady();
    this.element.hidden = false;
    const challenge = await api("GET", `/api/concerts/${this.concertId}/challenge`, undefined, { signal });
    const started = performance.now();
    const say = () => fill(this.progress, t("proof.working", { time: seconds(performance.now() - started) }));
    say();
    const ticking = setInterval(say, 100);
    try {
      this.widget.reset();
      // No artificial wait (the widget pads to half a second by default):
      // a fan's request goes in line the moment the work is done.
      this.widget.configure({ challenge, minDuration: 0 });
      const solved = await this.widget.verify();
      if (!solved?.payload) throw new Error(t("proof.failed"));
      const measure = performance.measure("pow-solve", { start: started, end: performance.now() });
      fill(this.progress, t("proof.solved", { time: seconds(measure.duration) }));
      return solved.payload;
    } catch (e) {
      fill(this.progress, "");
      throw e;
    } finally {
      clearInterval(ticking);
    }
  }
}

function seconds(ms) {
  return new Intl.NumberFormat(locale(), { style: "unit", unit: "second", unitDisplay: "narrow", minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(ms / 1000);
}
