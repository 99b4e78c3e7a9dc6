//! Keep the data shardable by concert (docs/scaling.md): every table of a
//! sale carries its concert's id, so that the way out past one primary
//! (Vitess, sharded by concert) stays open by construction (issue 59). A
//! table added without one fails here until it has one, or is named below
//! with the reason its rows belong to no one concert.

use std::collections::BTreeMap;

use ticket_core::testing::TestDatabase;

/// Tables whose rows belong to no one concert, and why.
const NOT_A_SALES: [(&str, &str); 7] = [
    ("concerts", "the concert itself: its id is the sharding key"),
    ("organizers", "a promoter runs many concerts"),
    (
        "organizer_members",
        "a promoter's team, for all its concerts",
    ),
    ("users", "accounts: a fan buys at many concerts"),
    (
        "organizer_invitations",
        "an invitation to a promoter's team, for all its concerts",
    ),
    ("token_revocations", "an account's ended sessions"),
    ("_sqlx_migrations", "the schema's own history"),
];

/// A sale's tables whose concert id may be unknown, and why.
const CONCERT_MAY_BE_UNKNOWN: [(&str, &str); 3] = [
    (
        "audit_entries",
        "an organizer's own business (its name, its team) names no concert",
    ),
    (
        "outbox",
        "an event about an account, not a sale, names no concert",
    ),
    (
        "payment_events",
        "a provider's event for a payment the box office does not know is kept, for replays",
    ),
];

#[tokio::test]
async fn every_table_of_a_sale_carries_its_concert_id() {
    let (db, pool) = TestDatabase::migrated().await;
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let keyed: BTreeMap<String, String> = sqlx::query_as::<_, (String, String)>(
        "SELECT CAST(table_name AS CHAR), CAST(is_nullable AS CHAR) FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND column_name = 'concert_id'",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert!(tables.len() > 20, "the schema's tables: {tables:?}");
    let mut wrong = Vec::new();
    for (table,) in &tables {
        let not_a_sale = NOT_A_SALES.iter().any(|(name, _)| name == table);
        let may_be_unknown = CONCERT_MAY_BE_UNKNOWN.iter().any(|(name, _)| name == table);
        match keyed.get(table).map(String::as_str) {
            None if !not_a_sale => wrong.push(format!("{table} has no concert_id column")),
            Some("YES") if !may_be_unknown => {
                wrong.push(format!("{table}.concert_id may be null"));
            }
            Some(_) if not_a_sale => {
                wrong.push(format!(
                    "{table} has a concert_id: it is a sale's, not the house's"
                ));
            }
            _ => {}
        }
    }
    // Every exception names a table that exists: none outlives its table.
    for (name, _) in NOT_A_SALES.iter().chain(&CONCERT_MAY_BE_UNKNOWN) {
        if !tables.iter().any(|(table,)| table == name) {
            wrong.push(format!("{name} is excepted but is no table"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    drop(db);
}
