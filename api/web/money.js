// Prices as the API gives them: whole minor units (cents; won have none)
// and an ISO 4217 code. The browser knows each currency's decimals and
// symbol; the page never does arithmetic in floating point beyond the one
// division for display.

import { locale } from "./i18n.js";

/** One formatter a currency and locale: making one costs more than formatting. */
const formats = new Map();

/** "₩240,000", "€12.50" for an amount in minor units. */
export function money(minor, currency) {
  const key = `${currency} ${locale()}`;
  let format = formats.get(key);
  if (!format) {
    const made = new Intl.NumberFormat(locale(), { style: "currency", currency });
    format = { made, decimals: made.resolvedOptions().maximumFractionDigits };
    formats.set(key, format);
  }
  return format.made.format(minor / 10 ** format.decimals);
}

/** The total of seats that each carry `price` (null: not priced), or null. */
export function totalOf(seats, currency) {
  if (!currency || seats.length === 0 || seats.some((s) => s.price == null)) return null;
  return money(seats.reduce((sum, s) => sum + s.price, 0), currency);
}

/** How many decimals `currency` has (2 for one the browser does not know). */
export function decimalsOf(currency) {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  } catch {
    return 2;
  }
}

/** "12.50" typed in `currency` as minor units (1250), or NaN. */
export function minorOf(text, currency) {
  return Math.round(Number(String(text).trim()) * 10 ** decimalsOf(currency));
}
