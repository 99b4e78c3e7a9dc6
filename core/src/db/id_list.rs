//! `IN (…)` lists of ids: the placeholders and their binds from one value,
//! so that they cannot disagree, and no list for no ids.
//!
//! The placeholders are padded to a power of two (at least 16), repeating
//! the last id (a repeated value in an `IN` list changes nothing), so that
//! each query has only a few distinct texts, each prepared once per
//! connection and cached. Why it matters: a statement that is not cached is
//! closed after use with a packet the server does not answer, and sqlx does
//! not set TCP_NODELAY, so the next command waits for the server's delayed
//! ACK, 40 ms every time.

use std::fmt;

use sqlx::mysql::MySqlArguments;
use sqlx::query::{Query, QueryAs};
use sqlx::{MySql, MySqlConnection};

/// Ids for one `IN (…)` list: `{list}` in a statement's text writes its
/// placeholders, `.bind_ids(&list)` binds them at that place in the order.
#[derive(Clone, Copy)]
pub(crate) struct IdList<'a, T> {
    ids: &'a [T],
}

impl<'a, T: Copy + Into<u64>> IdList<'a, T> {
    /// `None` for no ids: `IN ()` is not SQL, and what a statement over no
    /// ids means (nothing changed, nothing found) is for the caller to say,
    /// without a round trip.
    pub fn of(ids: &'a [T]) -> Option<Self> {
        (!ids.is_empty()).then_some(Self { ids })
    }

    fn padded_len(&self) -> usize {
        self.ids.len().max(16).next_power_of_two()
    }

    fn padded(&self) -> impl Iterator<Item = u64> + '_ {
        let last = self.ids.last().copied().map_or(0, Into::into);
        (0..self.padded_len()).map(move |i| self.ids.get(i).copied().map_or(last, Into::into))
    }
}

impl<T: Copy + Into<u64>> fmt::Display for IdList<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.padded_len() {
            f.write_str(if i == 0 { "?" } else { ",?" })?;
        }
        Ok(())
    }
}

/// Binding an [`IdList`] (or one id), for statements with and without rows.
pub(crate) trait BindIds: Sized {
    fn bind_id(self, id: u64) -> Self;

    fn bind_ids<T: Copy + Into<u64>>(self, list: &IdList<'_, T>) -> Self {
        list.padded().fold(self, Self::bind_id)
    }
}

impl BindIds for Query<'_, MySql, MySqlArguments> {
    fn bind_id(self, id: u64) -> Self {
        self.bind(id)
    }
}

impl<O> BindIds for QueryAs<'_, MySql, O, MySqlArguments> {
    fn bind_id(self, id: u64) -> Self {
        self.bind(id)
    }
}

/// Runs the statement `write` makes for `ids` (its `IN` list last in the
/// statement, its other values bound by `write`) and returns the rows it
/// changed: none for no ids, without a round trip.
pub(crate) async fn execute_for_ids<T: Copy + Into<u64>>(
    conn: &mut MySqlConnection,
    ids: &[T],
    write: impl FnOnce(&IdList<'_, T>) -> Query<'static, MySql, MySqlArguments>,
) -> Result<u64, sqlx::Error> {
    let Some(list) = IdList::of(ids) else {
        return Ok(0);
    };
    let done = write(&list).bind_ids(&list).execute(conn).await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placeholders(n: usize) -> String {
        let ids: Vec<u64> = (1..=n as u64).collect();
        IdList::of(&ids).map(|l| l.to_string()).unwrap_or_default()
    }

    #[test]
    fn lists_come_in_few_sizes() {
        assert_eq!(placeholders(1).matches('?').count(), 16);
        assert_eq!(placeholders(16).matches('?').count(), 16);
        assert_eq!(placeholders(17).matches('?').count(), 32);
        assert_eq!(placeholders(1000).matches('?').count(), 1024);
        assert_eq!(placeholders(3), "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?");
    }

    #[test]
    fn no_ids_make_no_list() {
        assert!(IdList::<u64>::of(&[]).is_none());
    }

    #[test]
    fn padding_repeats_the_last_id() {
        let ids = [7u64, 9];
        let padded: Vec<u64> = IdList::of(&ids).unwrap().padded().collect();
        assert_eq!(padded.len(), 16);
        assert_eq!(&padded[..3], &[7, 9, 9]);
        assert!(padded[2..].iter().all(|&id| id == 9));
    }
}
