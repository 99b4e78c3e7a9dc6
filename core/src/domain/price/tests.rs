//! The price categories' rules, case by case.

use super::*;

fn category<'a>(
    name: &'a str,
    price: u64,
    currency: &'a str,
    rows: &'a [String],
) -> CategoryInput<'a> {
    CategoryInput {
        name,
        price,
        currency,
        rows,
        colour: None,
    }
}

#[test]
fn a_colour_is_six_hex_digits_kept_lowercase() {
    let rows = rows(&[]);
    let mut input = category("VIP", 100, "EUR", &rows);
    input.colour = Some(" #C0392B ");
    let parsed = PriceCategories::parse(&[input.clone()]).unwrap();
    assert_eq!(
        parsed.categories[0].colour.as_ref().map(Colour::as_str),
        Some("#c0392b")
    );
    for bad in ["c0392b", "#c0392", "#c0392bb", "#g0392b", ""] {
        input.colour = Some(bad);
        assert_eq!(
            PriceCategories::parse(&[input.clone()]).unwrap_err().field,
            "categories",
            "{bad:?}"
        );
    }
}

fn rows(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn currencies_are_iso_codes_with_their_decimals() {
    assert_eq!(Currency::parse("krw").unwrap().as_str(), "KRW");
    assert_eq!(Currency::parse("KRW").unwrap().decimals(), 0);
    assert_eq!(Currency::parse("EUR").unwrap().decimals(), 2);
    assert_eq!(Currency::parse("KWD").unwrap().decimals(), 3);
    for bad in ["", "EU", "EURO", "XYZ", "€€€"] {
        assert!(Currency::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_seat_takes_its_rows_category_or_the_first() {
    let (vip, floor) = (rows(&["a", "B"]), rows(&["AA"]));
    let categories = PriceCategories::parse(&[
        category("Standard", 90_000, "KRW", &[]),
        category("VIP", 150_000, "KRW", &vip),
        category("Floor", 120_000, "krw", &floor),
    ])
    .unwrap();
    assert_eq!(categories.currency.as_str(), "KRW");
    assert_eq!(categories.index_of_seat("A12"), 1);
    assert_eq!(categories.index_of_seat("B1"), 1);
    assert_eq!(categories.index_of_seat("AA3"), 2);
    assert_eq!(categories.index_of_seat("C7"), 0);
    assert_eq!(categories.index_of_seat("VIP-3"), 0);
    assert_eq!(categories.index_of_seat("7"), 0);
}

#[test]
fn bad_categories_are_refused_with_a_reason() {
    let a = rows(&["A"]);
    let refused = |input: &[CategoryInput<'_>]| PriceCategories::parse(input).unwrap_err().message;
    assert!(refused(&[]).contains("at least one"));
    assert!(
        refused(&[category("A", 1, "EUR", &[]), category("B", 1, "USD", &[])])
            .contains("same currency")
    );
    assert!(
        refused(&[
            category("VIP", 1, "EUR", &[]),
            category("vip", 2, "EUR", &[])
        ])
        .contains("twice")
    );
    assert!(
        refused(&[category("X", 1, "EUR", &a), category("Y", 2, "EUR", &a)])
            .contains("two categories")
    );
    assert!(refused(&[category("X", Amount::MAX + 1, "EUR", &[])]).contains("at most"));
    assert!(refused(&[category(" ", 1, "EUR", &[])]).contains("empty"));
    let digits = rows(&["1"]);
    assert!(refused(&[category("X", 1, "EUR", &digits)]).contains("letters"));
}

#[test]
fn a_total_needs_every_seat_priced_in_one_currency() {
    let seat =
        |price, currency| SeatPrice::from_stored(Some("VIP".into()), Some(price), Some(currency));
    let (a, b, c) = (seat(1_000, "EUR"), seat(2_500, "EUR"), seat(5, "USD"));
    let (total, currency) = total_of([a.as_ref(), b.as_ref()]).unwrap();
    assert_eq!((total.get(), currency.as_str()), (3_500, "EUR"));
    assert_eq!(total_of([a.as_ref(), None]), None);
    assert_eq!(total_of([a.as_ref(), c.as_ref()]), None);
    assert_eq!(total_of([]), None);
    assert_eq!(SeatPrice::from_stored(None, Some(1), Some("EUR")), None);
}

#[test]
fn totals_add_minor_units() {
    let prices = [120_000, 120_000, 90_000].map(Amount::from_stored);
    assert_eq!(Amount::total(prices).get(), 330_000);
    assert_eq!(Amount::total([]).get(), 0);
}

#[test]
fn amounts_are_written_with_their_currency_and_decimals() {
    let at = |minor, code| Amount::from_stored(minor).display_in(Currency::parse(code).unwrap());
    assert_eq!(at(240_000, "KRW"), "KRW 240,000");
    assert_eq!(at(123_450, "EUR"), "EUR 1,234.50");
    assert_eq!(at(5, "EUR"), "EUR 0.05");
    assert_eq!(at(1_234, "KWD"), "KWD 1.234");
    assert_eq!(at(0, "USD"), "USD 0.00");
    assert_eq!(at(100_000_000_000, "JPY"), "JPY 100,000,000,000");
}
