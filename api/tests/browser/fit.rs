//! What every view owes the people who use it (issue 48): no word of the
//! API's (a field name, an error code) where a sentence should be, and no
//! serious or critical accessibility violation by axe-core's rules.

use ticket_core::testing::browser::Browser;

/// The API's own words: its camelCase field names and its error codes,
/// which no view may show a person.
pub fn api_words() -> Vec<String> {
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

/// Fails when the view on screen shows an API field name or error code,
/// or has a serious or critical accessibility violation (axe-core).
pub async fn assert_fit_for_people(page: &Browser, words: &[String]) {
    let text = page
        .script("return document.body.innerText;", vec![])
        .await
        .as_str()
        .unwrap()
        .to_owned();
    for word in words {
        assert!(
            !text.contains(word.as_str()),
            "the page shows the API's {word:?}: {text}"
        );
    }
    let violations = page.accessibility_violations().await;
    assert!(
        violations.is_empty(),
        "axe-core finds serious or critical violations: {violations:#?}"
    );
}
