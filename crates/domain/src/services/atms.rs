//! ATM information: listing pages of the ATM set, filtered and near-me.

use std::sync::Arc;

use crate::atm_catalog::{AtmCatalog, AtmPage, AtmQuery, PageOutOfRange};
use crate::ports::{AtmDirectory, StoreUnavailable};

/// Why no page was returned; one variant, one status.
#[derive(Debug, thiserror::Error)]
pub enum ListAtmsError {
    /// The page is past the last one (400).
    #[error(transparent)]
    PageOutOfRange(#[from] PageOutOfRange),
    /// The ATM set cannot be read or vouched for (503).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Lists ATMs in pages of a fixed size.
pub struct AtmLocator {
    directory: Arc<dyn AtmDirectory>,
    page_size: usize,
}

impl AtmLocator {
    /// A locator cutting pages of `page_size` ATMs from `directory`.
    pub fn new(directory: Arc<dyn AtmDirectory>, page_size: usize) -> Self {
        Self { directory, page_size: page_size.max(1) }
    }

    /// The page size.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The current set: callers read its fingerprint and LastUpdated to answer
    /// conditional requests before cutting a page.
    ///
    /// # Errors
    /// [`ListAtmsError::Unavailable`].
    pub async fn current(&self) -> Result<Arc<AtmCatalog>, ListAtmsError> {
        Ok(self.directory.catalog().await?)
    }

    /// The page of `catalog` that `query` asks for.
    ///
    /// # Errors
    /// [`ListAtmsError::PageOutOfRange`].
    pub fn page(&self, catalog: &AtmCatalog, query: &AtmQuery) -> Result<AtmPage, ListAtmsError> {
        Ok(catalog.page(query, self.page_size)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MockAtmDirectory;

    #[tokio::test]
    async fn an_unreadable_set_is_unavailable() {
        let mut directory = MockAtmDirectory::new();
        directory.expect_catalog().returning(|| Err(StoreUnavailable::new("down")));
        let locator = AtmLocator::new(Arc::new(directory), 25);
        assert!(matches!(locator.current().await, Err(ListAtmsError::Unavailable(_))));
    }

    #[tokio::test]
    async fn a_page_past_the_end_of_an_empty_set_is_out_of_range() {
        let mut directory = MockAtmDirectory::new();
        directory.expect_catalog().returning(|| Ok(Arc::new(AtmCatalog::empty(0))));
        let locator = AtmLocator::new(Arc::new(directory), 25);
        let catalog = locator.current().await.unwrap();
        assert!(locator.page(&catalog, &AtmQuery { page: 1, ..AtmQuery::default() }).is_ok());
        let past = locator.page(&catalog, &AtmQuery { page: 2, ..AtmQuery::default() });
        assert!(matches!(past, Err(ListAtmsError::PageOutOfRange(_))));
    }
}
