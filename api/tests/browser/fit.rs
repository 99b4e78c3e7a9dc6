//! What every view owes the people who use it (issues 48 and 57): no word
//! of the API's (a field name, an error code) where a sentence should be,
//! no text that is in neither its language's catalogue nor the data
//! people typed, and no serious or critical accessibility violation by
//! axe-core's rules.

use std::collections::BTreeSet;

use ticket_core::testing::browser::Browser;

use super::helpers::TestApp;

/// What a view is checked against.
pub struct Fit {
    api_words: Vec<String>,
    pool: sqlx::MySqlPool,
    elsewhere: BTreeSet<String>,
}

impl Fit {
    pub fn new(app: &TestApp) -> Self {
        Self {
            api_words: api_words(),
            pool: app.pool.clone(),
            elsewhere: BTreeSet::new(),
        }
    }

    /// Words that come from elsewhere: a provider's message (Stripe.js
    /// speaks the language it is given; localstripe speaks English).
    pub fn with_words_from_elsewhere(mut self, text: &str) -> Self {
        self.elsewhere.extend(latin_words(text));
        self
    }
}

/// The API's own words: its camelCase field names and its error codes,
/// which no view may show a person.
fn api_words() -> Vec<String> {
    let doc =
        serde_json::to_value(<ticket_api::openapi::ApiDoc as utoipa::OpenApi>::openapi()).unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut words: Vec<String> = schemas
        .values()
        .filter_map(|s| s["properties"].as_object())
        .flat_map(|p| p.keys().cloned())
        .filter(|name| name.chars().any(|c| c.is_ascii_uppercase()))
        .collect();
    words.extend(
        schemas["ErrorCode"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned()),
    );
    words.sort();
    words.dedup();
    words
}

/// The words in Latin letters of a text, lowercased. A seat's row (one
/// letter) is no word, nor is a code with digits in it (a seat, a ticket's
/// or a door's code, a year).
fn latin_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace()
        .filter(|token| !token.chars().any(|c| c.is_ascii_digit()))
        .flat_map(|token| token.split(|c: char| !c.is_ascii_alphabetic()))
        .filter(|word| word.len() >= 2)
        .map(str::to_ascii_lowercase)
}

/// Every word in Latin letters of a language's catalogues (the fan's and
/// the operator's), placeholders left out.
fn catalogue_words(language: &str) -> BTreeSet<String> {
    fn leaves(value: &serde_json::Value, into: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => into.push(text.clone()),
            serde_json::Value::Object(forms) => forms.values().for_each(|v| leaves(v, into)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    for part in ["", "-operator"] {
        let path = format!(
            "{}/web/messages-{language}{part}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let catalogue: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        leaves(&catalogue, &mut texts);
    }
    texts
        .iter()
        .flat_map(|text| {
            let mut words = Vec::new();
            for (i, piece) in text.split(['{', '}']).enumerate() {
                // Odd pieces are placeholders' names.
                if i % 2 == 0 {
                    words.extend(latin_words(piece));
                }
            }
            words
        })
        .collect()
}

/// The columns that hold what people typed or chose (titles, names,
/// nicknames, rows, gates, reasons, a plan's labels, a time zone): the
/// page shows these as they are, in whatever letters they were given.
const TYPED: &[&str] = &[
    "title",
    "venue",
    "nickname",
    "email",
    "seat_number",
    "name",
    "category",
    "category_name",
    "row_labels",
    "cancel_reason",
    "gate",
    "checked_in_gate",
    "zone",
    "row_label",
    "plan_label",
    "plan_category",
    "plan",
    "time_zone",
    "payment_reference",
    "code",
];

/// Every word in Latin letters of what people typed, as the database holds
/// it now.
async fn typed_words(pool: &sqlx::MySqlPool) -> BTreeSet<String> {
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT CAST(TABLE_NAME AS CHAR), CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
          WHERE TABLE_SCHEMA = DATABASE() AND DATA_TYPE IN ('varchar', 'char', 'text', 'mediumtext', 'longtext')",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut words = BTreeSet::new();
    for (table, column) in columns {
        if !TYPED.contains(&column.to_ascii_lowercase().as_str()) {
            continue;
        }
        let values: Vec<(Option<String>,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT DISTINCT CAST(`{column}` AS CHAR) FROM `{table}`"
        )))
        .fetch_all(pool)
        .await
        .unwrap();
        for value in values.into_iter().filter_map(|(value,)| value) {
            words.extend(latin_words(&value));
        }
    }
    words
}

/// The venues' zones' abbreviations through a year ("KST"; "CET" and
/// "CEST"), as the API names them beside a concert's times.
async fn zone_names(pool: &sqlx::MySqlPool) -> BTreeSet<String> {
    let zones: Vec<String> = sqlx::query_scalar("SELECT DISTINCT time_zone FROM concerts")
        .fetch_all(pool)
        .await
        .unwrap();
    let mut names = BTreeSet::new();
    for zone in zones {
        let zone = ticket_core::domain::time_zone::VenueTimeZone::from_stored(&zone);
        for month in 0..12 {
            let at = chrono::Utc::now() + chrono::Duration::days(31 * month);
            names.extend(latin_words(&zone.abbreviation_at(at)));
        }
    }
    names
}

/// Every text the view shows a person: its text nodes and the words its
/// attributes say (placeholders, labels, titles, alternatives), hidden
/// parts included (they are shown at a click). The card field is the
/// provider's (Stripe draws it in its own frame, in the language it is
/// given; localstripe draws it in the page), and what its fields hold is
/// what the person typed (a category named in a form not yet sent, a
/// door's gate kept in the browser: data the view may show back). The fallback for browsers without scripts
/// speaks both languages at once.
const SHOWN: &str = "
    const texts = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (node.parentElement?.closest('script, style, noscript, .card-field')) continue;
      const text = node.textContent.trim();
      if (text) texts.push(text);
    }
    for (const element of document.querySelectorAll('[placeholder], [aria-label], [title], [alt]')) {
      if (element.closest('.card-field')) continue;
      for (const name of ['placeholder', 'aria-label', 'title', 'alt']) {
        const value = element.getAttribute(name);
        if (value) texts.push(value);
      }
    }
    const typed = [...document.querySelectorAll('input, textarea')]
      .filter((field) => !field.closest('.card-field') && !['hidden', 'submit', 'button'].includes(field.type))
      .map((field) => field.value);
    // And what this browser keeps of what was typed (the door's gate).
    const strings = (value) => typeof value === 'string' ? [value]
      : value && typeof value === 'object' ? Object.values(value).flatMap(strings) : [];
    for (let i = 0; i < localStorage.length; i++) {
      const kept = localStorage.getItem(localStorage.key(i));
      try { typed.push(...strings(JSON.parse(kept))); } catch { typed.push(kept); }
    }
    // What Intl writes in the page's locales (the browser's, or the
    // language's usual one): months and days of the week.
    const intl = [];
    for (const locale of [...navigator.languages, 'en-GB', 'ko-KR'])
    for (let month = 0; month < 12; month++) {
      // Twelve days from 1 January 2099 on, 31 days apart: every month
      // and every day of the week.
      const day = new Date(Date.UTC(2099, 0, 1 + 31 * month, 3));
      for (const style of ['long', 'short', 'narrow']) {
        intl.push(day.toLocaleDateString(locale, { month: style, weekday: style, timeZone: 'UTC' }));
      }
    }
    return { language: document.documentElement.lang, texts, typed, intl };";

/// Fails when the view on screen shows an API field name or error code, a
/// text in Latin letters that is in neither its language's catalogue nor
/// the data, or has a serious or critical accessibility violation
/// (axe-core).
pub async fn assert_fit_for_people(page: &Browser, fit: &Fit) {
    let text = page
        .script("return document.body.innerText;", vec![])
        .await
        .as_str()
        .unwrap()
        .to_owned();
    for word in &fit.api_words {
        assert!(
            !text.contains(word.as_str()),
            "the page shows the API's {word:?}: {text}"
        );
    }
    assert_every_word_has_a_source(page, fit).await;
    let violations = page.accessibility_violations().await;
    assert!(
        violations.is_empty(),
        "axe-core finds serious or critical violations: {violations:#?}"
    );
}

/// Text the page shows that is in no catalogue: a word in Latin letters
/// that neither the catalogue of the page's language has nor anyone typed.
/// In Korean this is any English sentence a view wrote on its own; in
/// English, any word no English message uses.
async fn assert_every_word_has_a_source(page: &Browser, fit: &Fit) {
    let shown = page.script(SHOWN, vec![]).await;
    let language = shown["language"].as_str().unwrap_or("en").to_owned();
    let mut known = catalogue_words(&language);
    known.extend(typed_words(&fit.pool).await);
    known.extend(fit.elsewhere.iter().cloned());
    known.extend(zone_names(&fit.pool).await);
    for typed in shown["typed"]
        .as_array()
        .unwrap()
        .iter()
        .chain(shown["intl"].as_array().unwrap())
    {
        known.extend(latin_words(typed.as_str().unwrap_or_default()));
    }
    // The language switch names each language in its own words.
    known.insert("english".to_owned());
    let strays: Vec<String> = shown["texts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|text| text.as_str())
        .filter_map(|text| {
            let unknown: Vec<String> = latin_words(text).filter(|w| !known.contains(w)).collect();
            (!unknown.is_empty()).then(|| format!("{text} ({})", unknown.join(", ")))
        })
        .collect();
    assert!(
        strays.is_empty(),
        "the page ({language}) shows text in no catalogue: {strays:#?}"
    );
}
