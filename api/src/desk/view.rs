//! What the desk's routes answer: a shift with its money.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::desk::{MovementRow, ShiftRow};
use ticket_core::domain::desk::{MethodTotal, ShiftTotals};
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClerkResponse {
    /// Null once the clerk's account has gone.
    user_id: Option<u64>,
    nick_name: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MovementResponse {
    reservation_id: u64,
    /// SALE or REFUND.
    #[schema(example = "SALE")]
    kind: &'static str,
    /// CASH or CARD.
    #[schema(example = "CASH")]
    method: String,
    amount: u64,
    at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MethodTotalResponse {
    sales: u64,
    refunds: u64,
    net: i64,
}

impl From<MethodTotal> for MethodTotalResponse {
    fn from(t: MethodTotal) -> Self {
        Self {
            sales: t.sales,
            refunds: t.refunds,
            net: t.net,
        }
    }
}

/// A shift: its float, what it took and gave back by method, the cash its
/// drawer should hold, and once closed what was counted.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShiftResponse {
    id: u64,
    concert_id: u64,
    clerk: ClerkResponse,
    /// The concert's currency; null for a free concert.
    currency: Option<String>,
    float: u64,
    opened_at: DateTime<Utc>,
    closed_at: Option<DateTime<Utc>>,
    cash: MethodTotalResponse,
    card: MethodTotalResponse,
    /// The float and the cash taken, less the cash given back.
    expected_cash: i64,
    /// Once closed: what the clerk counted, and counted less expected.
    counted_cash: Option<u64>,
    difference: Option<i64>,
    /// The shift's sales and refunds in time order.
    movements: Vec<MovementResponse>,
}

impl ShiftResponse {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn of(shift: ShiftRow, moved: Vec<MovementRow>) -> Self {
        let movements: Vec<_> = moved.iter().filter_map(MovementRow::movement).collect();
        let totals = ShiftTotals::of(shift.float_amount, &movements);
        // A closed shift shows what was expected when it closed.
        let expected = shift.expected_cash.unwrap_or(totals.expected_cash);
        let counted = shift.counted_cash;
        Self {
            id: shift.id.get(),
            concert_id: shift.concert_id.get(),
            clerk: ClerkResponse {
                user_id: shift.user_id.map(|u| u.get()),
                nick_name: shift.nickname,
            },
            currency: shift.currency,
            float: shift.float_amount,
            opened_at: shift.opened_at,
            closed_at: shift.closed_at,
            cash: totals.cash.into(),
            card: totals.card.into(),
            expected_cash: expected,
            counted_cash: counted,
            difference: counted.map(|c| i64::try_from(c).unwrap_or(i64::MAX) - expected),
            movements: moved
                .into_iter()
                .map(|m| MovementResponse {
                    reservation_id: m.reservation_id,
                    kind: if m.refund == 1 { "REFUND" } else { "SALE" },
                    method: m.method,
                    amount: m.amount,
                    at: m.at,
                })
                .collect(),
        }
    }
}
