// Paying for a hold by card through Stripe.js, loaded only when a fan pays
// (from the address the box office names; the CSP allows that origin and
// no other). The card is typed into Stripe's field and goes to Stripe,
// never through the box office, which hears from Stripe that the money
// moved and sells the hold. What the fan sees: paying, paid (then the
// tickets), declined (in words; the hold runs on), and a payment that
// arrived after the hold ended (refunded).

import { Problem, api } from "./api.js";
import { fill, h } from "./dom.js";
import { money } from "./money.js";
import { language, t } from "./i18n.js";

/** How long the page waits for Stripe's word to reach the box office. */
const SETTLE_WAIT_MS = 120_000;
const SETTLE_POLL_MS = 1000;

let config = null;

/**
 * The box office's payment settings: `{provider, publishableKey, jsUrl}`,
 * read again whenever asked (one read for calls at the same moment): a box
 * office restarted with others (card payments turned on) is noticed at
 * the next payment, not at the next full reload.
 */
export function paymentsConfig() {
  config ??= api("GET", "/api/payments/config").finally(() => {
    config = null;
  });
  return config;
}

/** The hold's total in minor units, or 0 (free, or not priced). */
export function amountDue(reservation) {
  return reservation.currency ? reservation.total || 0 : 0;
}

/** Whether this hold is paid for on the page rather than confirmed. */
export async function paidOnline(reservation) {
  if (amountDue(reservation) === 0) return false;
  try {
    return (await paymentsConfig()).provider === "stripe";
  } catch {
    return false;
  }
}

let stripeJs = null;
const RELOADED = "ticket_reloaded_for_payments";

/**
 * Stripe.js from `url`. The page's policy allows the script origin the box
 * office named when the page was loaded: settings changed since (the box
 * office restarted with payments on) are taken by loading the page again,
 * once a minute at most; what was open is found again (a live hold is
 * shown wherever its concert is opened).
 */
function loadStripe(url) {
  if (stripeJs?.url !== url) {
    stripeJs = { url, loaded: new Promise((resolve, reject) => {
      let blocked = false;
      const origin = new URL(url, location.href).origin;
      const noticeBlock = (e) => {
        if (e.blockedURI?.startsWith(origin)) blocked = true;
      };
      document.addEventListener("securitypolicyviolation", noticeBlock);
      const script = h("script", { src: url });
      script.addEventListener("load", () => {
        document.removeEventListener("securitypolicyviolation", noticeBlock);
        resolve(window.Stripe);
      });
      script.addEventListener("error", () => {
        // The policy's report comes as a task of its own: wait for it.
        setTimeout(() => {
          document.removeEventListener("securitypolicyviolation", noticeBlock);
          stripeJs = null;
          script.remove();
          const last = Number(sessionStorage.getItem(RELOADED) || 0);
          if (blocked && Date.now() - last > 60_000) {
            sessionStorage.setItem(RELOADED, String(Date.now()));
            location.reload();
            return;
          }
          reject(new Error(t("pay.formNotLoaded")));
        }, 100);
      });
      document.head.append(script);
    }) };
  }
  return stripeJs.loaded;
}

/**
 * The card form of a held reservation. `onSettled(outcome)` is called
 * once the box office knows: `{paid: reservation}` or `{refunded: refund,
 * reservation}` (the hold had ended).
 */
export class PayPanel {
  constructor(reservation, { onSettled, signal }) {
    this.reservation = reservation;
    this.onSettled = onSettled;
    this.signal = signal;
    this.busy = false;
    const amount = money(amountDue(reservation), reservation.currency);
    this.status = h("p", { class: "pay-status", role: "status" });
    this.card = h("div", { class: "card-field", id: `card-${reservation.reservationId}` });
    this.button = h("button", { type: "submit", class: "primary", disabled: true }, t("pay.pay", { amount }));
    this.element = h(
      "form",
      { class: "pay", "aria-label": t("pay.pay", { amount }) },
      h("label", { for: this.card.id }, t("pay.card")),
      this.card,
      this.button,
      this.status,
    );
    this.element.addEventListener("submit", (event) => {
      event.preventDefault();
      this.pay();
    });
    this.ready = this.prepare();
  }

  /** Loads Stripe.js and mounts its card field. */
  async prepare() {
    try {
      const settings = await paymentsConfig();
      const Stripe = await loadStripe(settings.jsUrl);
      this.stripe = Stripe(settings.publishableKey);
      // Stripe writes its card form and its reasons in the page's language.
      this.field = this.stripe.elements({ locale: language() }).create("card");
      this.field.mount(this.card);
      this.button.disabled = false;
    } catch (e) {
      this.say(e.message, "failed");
    }
  }

  say(text, state = "") {
    this.element.dataset.state = state;
    fill(this.status, text);
  }

  async pay() {
    if (this.busy) return;
    this.busy = true;
    this.button.disabled = true;
    this.say(t("pay.paying"), "paying");
    let payment;
    try {
      payment = await api("POST", `/api/reservations/${this.reservation.reservationId}/payment`, {});
    } catch (e) {
      this.busy = false;
      this.button.disabled = false;
      this.say(e instanceof Problem && e.code === "PAYMENTS_UNAVAILABLE" ? t("pay.unavailable") : e.message, "failed");
      return;
    }
    if (payment.status !== "SUCCEEDED") {
      const result = await this.stripe.confirmCardPayment(payment.clientSecret, { payment_method: { card: this.field } });
      if (result.error) {
        this.busy = false;
        this.button.disabled = false;
        this.say(t("pay.declinedStillHeld", { reason: declined(result.error) }), "declined");
        return;
      }
    }
    this.say(t("pay.received"), "paying");
    await this.settled();
  }

  /** Waits for the box office to have Stripe's word: sold, or refunded. */
  async settled() {
    const id = this.reservation.reservationId;
    const until = Date.now() + SETTLE_WAIT_MS;
    while (!this.signal?.aborted && Date.now() < until) {
      try {
        const reservation = await api("GET", `/api/reservations/${id}`);
        if (reservation.status === "CONFIRMED") {
          this.onSettled({ paid: reservation });
          return;
        }
        if (reservation.status !== "HELD") {
          const { refunds } = await api("GET", `/api/reservations/${id}/payments`);
          if (refunds.length > 0) {
            this.onSettled({ refunded: refunds[refunds.length - 1], reservation });
            return;
          }
        }
      } catch {
        // The network comes and goes; the payment is safe at Stripe.
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
    if (!this.signal?.aborted) {
      this.say(t("pay.notHeardYet"), "paying");
    }
  }
}

/** Stripe's reason in words a fan reads (its messages are written so). */
function declined(error) {
  const reason = error?.message || t("pay.didNotGoThrough");
  return error?.type === "validation_error" ? reason : t("pay.notPaid", { reason });
}

/**
 * "€178.00 refunded to your card" or "… is being refunded"; money taken
 * at the box office (`byHand`) is given back there, never to a card.
 */
export function refundWords(refund, { byHand = false } = {}) {
  const amount = money(refund.amount, refund.currency);
  if (byHand) return t(refund.status === "SUCCEEDED" ? "pay.givenBackAtDesk" : "pay.toCollectAtDesk", { amount });
  if (refund.status === "SUCCEEDED") return t("pay.refunded", { amount });
  if (refund.status === "FAILED") return t("pay.refundFailed", { amount });
  return t("pay.refunding", { amount });
}
