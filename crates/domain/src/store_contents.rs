//! What a store holds, by kind, and the one rule that depends on it: the demo data set
//! goes only into a store that no operator has written to.

/// Which kinds of operator data a store holds.
///
/// Signing keys are not operator data here: `serve` creates one in a new store before
/// anything else, and the demo set does not touch keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreContents {
    /// Registered client applications.
    pub clients: bool,
    /// Supported (country, business, channel) combinations.
    pub supported_channels: bool,
    /// Branch wait times.
    pub wait_times: bool,
    /// ATMs.
    pub atms: bool,
    /// Records of issued tokens.
    pub token_records: bool,
}

impl StoreContents {
    /// Whether the demo data set may be loaded: only into a store that holds no operator
    /// data of any kind. Loading it next to an operator's data would mix invented
    /// clients, branches or ATMs with real ones, or replace real ATMs outright (the demo
    /// set replaces the whole ATM set).
    pub fn takes_demo_data(&self) -> bool {
        *self == Self::default()
    }
}

/// The kinds held, in words: "clients, ATMs and token records"; "nothing" when empty.
impl std::fmt::Display for StoreContents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = [
            (self.clients, "clients"),
            (self.supported_channels, "supported channels"),
            (self.wait_times, "wait times"),
            (self.atms, "ATMs"),
            (self.token_records, "token records"),
        ]
        .into_iter()
        .filter_map(|(held, kind)| held.then_some(kind))
        .collect();
        match kinds.as_slice() {
            [] => f.write_str("nothing"),
            [one] => f.write_str(one),
            [first @ .., last] => write!(f, "{} and {last}", first.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_store_holds_reads_as_words() {
        assert_eq!(StoreContents::default().to_string(), "nothing");
        assert_eq!(StoreContents { atms: true, ..StoreContents::default() }.to_string(), "ATMs");
        let three = StoreContents { clients: true, atms: true, token_records: true, ..StoreContents::default() };
        assert_eq!(three.to_string(), "clients, ATMs and token records");
    }

    #[test]
    fn a_store_with_nothing_in_it_takes_the_demo_data() {
        assert!(StoreContents::default().takes_demo_data());
    }

    #[test]
    fn a_store_with_any_kind_of_operator_data_does_not() {
        let kinds: [fn(&mut StoreContents); 5] = [
            |held| held.clients = true,
            |held| held.supported_channels = true,
            |held| held.wait_times = true,
            |held| held.atms = true,
            |held| held.token_records = true,
        ];
        for holds in kinds {
            let mut contents = StoreContents::default();
            holds(&mut contents);
            assert!(!contents.takes_demo_data(), "{contents:?}");
        }
    }
}
