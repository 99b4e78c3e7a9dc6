// The page's words: one catalogue per language (messages-en.json,
// messages-ko.json), so that no view writes a sentence of its own; the
// operator's and the door's words in a part of their own
// (messages-en-operator.json), loaded only by their views. The language
// is the one chosen with the switch (remembered in this browser and on
// the account), else the first of the browser's languages the box office
// speaks, else English. Only the chosen language is loaded.

export const LANGUAGES = { en: "English", ko: "한국어" };
const STORED = "ticket.language";

const state = { language: "en", words: {}, locale: "en", plurals: null, numbers: null, parts: new Set() };

async function catalogue(language, part) {
  const name = part ? `messages-${language}-${part}.json` : `messages-${language}.json`;
  const response = await fetch(`/assets/${name}`);
  if (!response.ok) throw new Error(`${name}: ${response.status}`);
  return response.json();
}

/** Adds a part's words (`"operator"`) in the language spoken, once. */
export async function useWords(part) {
  if (state.parts.has(part)) return;
  Object.assign(state.words, await catalogue(state.language, part));
  state.parts.add(part);
}

/** The language the page speaks now ("en", "ko"). */
export function language() {
  return state.language;
}

/** The BCP 47 locale for `Intl`: the browser's own variant of the language when it has one ("en-US"), else the language's usual one. */
export function locale() {
  return state.locale;
}

/** Whether the switch chose the language in this browser. */
export function chosenHere() {
  return localStorage.getItem(STORED) in LANGUAGES;
}

/** The language this browser asks for: the switch's, else its own. */
export function wantedLanguage() {
  const stored = localStorage.getItem(STORED);
  if (stored in LANGUAGES) return stored;
  for (const tag of navigator.languages || [navigator.language]) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (base in LANGUAGES) return base;
  }
  return "en";
}

/** Loads `code`'s catalogue and speaks it; `remember`: the switch chose it. */
export async function useLanguage(code, { remember = false } = {}) {
  const chosen = code in LANGUAGES ? code : "en";
  const parts = [...state.parts];
  const loaded = await Promise.all([catalogue(chosen), ...parts.map((part) => catalogue(chosen, part))]);
  state.words = Object.assign({}, ...loaded);
  state.language = chosen;
  const own = (navigator.languages || []).find((tag) => String(tag).toLowerCase().split("-")[0] === chosen);
  state.locale = own || (chosen === "ko" ? "ko-KR" : "en-GB");
  state.plurals = new Intl.PluralRules(state.locale);
  state.numbers = new Intl.NumberFormat(state.locale);
  document.documentElement.lang = chosen;
  if (remember) localStorage.setItem(STORED, chosen);
  // The page repaints its words (app.js listens).
  window.dispatchEvent(new CustomEvent("ticket:language"));
}

/** Whether the catalogue has `key` (for messages chosen by a code). */
export function has(key) {
  return Object.hasOwn(state.words, key);
}

/** The catalogue's text for `key` (one form of it, by `count`). */
function text(key, params) {
  const found = state.words[key];
  if (found === undefined) {
    // A missing word is a bug the tests see (a console error), not a blank.
    console.error(`no message "${key}" in ${state.language}`);
    return key;
  }
  return typeof found === "object" ? found[state.plurals.select(params.count ?? 0)] ?? found.other : found;
}

/** A parameter in words: numbers in the locale's digits. */
function shown(value) {
  return typeof value === "number" ? state.numbers.format(value) : value;
}

/**
 * The catalogue's text for `key`, its `{name}`s filled from `params`
 * (numbers in the locale's digits); a text with forms ("one", "other")
 * takes the one `params.count` calls for.
 */
export function t(key, params = {}) {
  return text(key, params).replace(/\{(\w+)\}/g, (whole, name) => {
    const value = params[name];
    return value === undefined || value === null ? whole : String(shown(value));
  });
}

/** As `t`, with elements among the parameters (a link in a sentence): the parts to append. */
export function tNodes(key, params = {}) {
  return text(key, params)
    .split(/(\{\w+\})/)
    .filter((part) => part !== "")
    .map((part) => {
      const name = /^\{(\w+)\}$/.exec(part)?.[1];
      return name && params[name] !== undefined ? shown(params[name]) : part;
    });
}
