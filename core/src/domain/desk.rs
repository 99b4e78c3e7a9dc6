//! The desk's money: how it was taken, and what a shift's drawer should
//! hold at its close.

use serde::{Deserialize, Serialize};

use super::FieldError;

/// How money changed hands at the desk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeskMethod {
    /// Notes and coins, into or out of the drawer.
    Cash,
    /// The card terminal.
    Card,
}

impl DeskMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cash => "CASH",
            Self::Card => "CARD",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        match raw {
            "CASH" => Ok(Self::Cash),
            "CARD" => Ok(Self::Card),
            _ => Err(FieldError::new("method", "must be CASH or CARD")),
        }
    }
}

/// Money moved on a shift: a sale (in) or a refund (out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Movement {
    pub method: DeskMethod,
    pub amount: u64,
    pub refund: bool,
}

/// One method's money on a shift.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodTotal {
    pub sales: u64,
    pub refunds: u64,
    /// Sales less refunds (negative when more went back than came in).
    pub net: i64,
}

/// What a shift took and gave back, by method, and the cash its drawer
/// should hold: the float, the cash taken, less the cash given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShiftTotals {
    pub cash: MethodTotal,
    pub card: MethodTotal,
    pub expected_cash: i64,
}

impl ShiftTotals {
    pub fn of(float: u64, movements: &[Movement]) -> Self {
        let mut totals = [MethodTotal::default(); 2];
        for m in movements {
            let total = &mut totals[usize::from(m.method == DeskMethod::Card)];
            if m.refund {
                total.refunds += m.amount;
            } else {
                total.sales += m.amount;
            }
        }
        for total in &mut totals {
            total.net = signed(total.sales) - signed(total.refunds);
        }
        Self {
            cash: totals[0],
            card: totals[1],
            expected_cash: signed(float) + totals[0].net,
        }
    }
}

fn signed(amount: u64) -> i64 {
    i64::try_from(amount).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drawer_holds_the_float_and_the_cash_taken_less_the_cash_given_back() {
        let sale = |method, amount| Movement {
            method,
            amount,
            refund: false,
        };
        let moved = [
            sale(DeskMethod::Cash, 5000),
            sale(DeskMethod::Card, 2500),
            sale(DeskMethod::Cash, 2500),
            Movement {
                method: DeskMethod::Cash,
                amount: 2500,
                refund: true,
            },
        ];
        let totals = ShiftTotals::of(10_000, &moved);
        assert_eq!(
            (totals.cash.sales, totals.cash.refunds, totals.cash.net),
            (7500, 2500, 5000)
        );
        assert_eq!((totals.card.sales, totals.card.net), (2500, 2500));
        assert_eq!(totals.expected_cash, 15_000);
        assert_eq!(ShiftTotals::of(0, &[]).expected_cash, 0);
    }

    #[test]
    fn methods_are_cash_or_card() {
        assert_eq!(DeskMethod::parse("CASH"), Ok(DeskMethod::Cash));
        assert!(DeskMethod::parse("cash").is_err());
    }
}
