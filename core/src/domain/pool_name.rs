//! A pool as a request by count or a waiting-list entry names it, and what
//! the name means in its concert: its position among the concert's price
//! categories or standing areas. A name is resolved again where it is
//! written, under the concert's line lock, because an operator may rename
//! or reorder the categories between the request's reading and its write.

use super::{AskedPool, FieldError, PriceCategories, StandingAreas};

/// A price category's or a standing area's name, as the fan gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolName {
    Category(String),
    Area(String),
}

impl PoolName {
    /// The request's field that names it.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Category(_) => "category",
            Self::Area(_) => "area",
        }
    }
}

/// A concert's price categories and standing areas: what a name is
/// resolved against, and what an answer names a pool by.
#[derive(Debug, Clone, Default)]
pub struct PoolNames {
    categories: Option<PriceCategories>,
    areas: StandingAreas,
}

impl PoolNames {
    pub fn new(categories: Option<PriceCategories>, areas: StandingAreas) -> Self {
        Self { categories, areas }
    }

    fn category_names(&self) -> Vec<&str> {
        self.categories.as_ref().map_or_else(Vec::new, |c| {
            c.categories.iter().map(|c| c.name.as_str()).collect()
        })
    }

    /// The pool `named`: an error naming the field for a category or area
    /// the concert does not have.
    pub fn pool(&self, named: &PoolName) -> Result<AskedPool, FieldError> {
        let (position, names, kind) = match named {
            PoolName::Category(name) => (
                self.categories
                    .as_ref()
                    .and_then(|c| c.position_of(name))
                    .and_then(|p| u8::try_from(p).ok())
                    .map(AskedPool::Category),
                self.category_names(),
                "price categories",
            ),
            PoolName::Area(name) => (
                self.areas.position_of(name).map(AskedPool::Area),
                self.areas.areas.iter().map(|a| a.name.as_str()).collect(),
                "standing areas",
            ),
        };
        position.ok_or_else(|| {
            let message = if names.is_empty() {
                format!("this concert has no {kind} to ask for")
            } else {
                format!("must be one of this concert's {kind}: {}", names.join(", "))
            };
            FieldError::new(named.field(), message)
        })
    }

    /// The category's and the area's names of `pool` (each `None` when it
    /// is not of that kind, or is no more).
    pub fn names(&self, pool: Option<AskedPool>) -> (Option<String>, Option<String>) {
        match pool {
            None => (None, None),
            Some(AskedPool::Category(p)) => {
                let name = self
                    .category_names()
                    .get(usize::from(p))
                    .map(|n| (*n).to_owned());
                (name, None)
            }
            Some(AskedPool::Area(p)) => {
                let name = self.areas.areas.get(usize::from(p)).map(|a| a.name.clone());
                (None, name)
            }
        }
    }
}
