use super::FieldError;

/// A zero-based page of a listing, bounded so a client cannot ask for
/// everything at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub page: u32,
    pub size: u32,
}

/// How large a page of one listing may be.
#[derive(Debug, Clone, Copy)]
pub struct PageBounds {
    pub default_size: u32,
    pub max_size: u32,
}

impl PageRequest {
    pub const DEFAULT_SIZE: u32 = 20;
    pub const MAX_SIZE: u32 = 100;
    /// Deep pages are never useful to a person and make the database skip rows.
    pub const MAX_PAGE: u32 = 10_000;
    /// Lists of concerts and reservations.
    pub const LISTS: PageBounds = PageBounds {
        default_size: Self::DEFAULT_SIZE,
        max_size: Self::MAX_SIZE,
    };
    /// A concert's seats: a seat map takes them in large pages, and a
    /// seed-sized concert fits one default answer.
    pub const SEATS: PageBounds = PageBounds {
        default_size: 1_000,
        max_size: 1_000,
    };

    pub fn parse(page: Option<u32>, size: Option<u32>) -> Result<Self, FieldError> {
        Self::parse_within(page, size, Self::LISTS)
    }

    pub fn parse_within(
        page: Option<u32>,
        size: Option<u32>,
        bounds: PageBounds,
    ) -> Result<Self, FieldError> {
        let page = page.unwrap_or(0);
        let size = size.unwrap_or(bounds.default_size);
        if page > Self::MAX_PAGE {
            return Err(FieldError::new(
                "page",
                format!("must be at most {}", Self::MAX_PAGE),
            ));
        }
        if !(1..=bounds.max_size).contains(&size) {
            return Err(FieldError::new(
                "size",
                format!("must be between 1 and {}", bounds.max_size),
            ));
        }
        Ok(Self { page, size })
    }

    pub fn offset(self) -> u64 {
        u64::from(self.page) * u64::from(self.size)
    }

    pub fn total_pages(self, total: u64) -> u64 {
        total.div_ceil(u64::from(self.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let p = PageRequest::parse(None, None).unwrap();
        assert_eq!((p.page, p.size, p.offset()), (0, 20, 0));
        assert_eq!(PageRequest::parse(Some(3), Some(10)).unwrap().offset(), 30);
        assert!(PageRequest::parse(None, Some(0)).is_err());
        assert!(PageRequest::parse(None, Some(101)).is_err());
        assert!(PageRequest::parse(Some(10_001), None).is_err());
        assert_eq!(p.total_pages(41), 3);
        assert_eq!(p.total_pages(0), 0);
    }
}
