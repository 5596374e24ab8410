//! The ATM code lists a query filters by (OBIE ATM 2.3 `ATMServices` and
//! `Accessibility`), each code with a fixed bit for fast filtering.
//!
//! The records themselves are read and validated at the edge (the adapters'
//! `formats::obie` module, field for field as `docs/reference/obie-atml.2.3.0.swagger.json`) and reach
//! the domain in stored form ([`crate::atm_catalog::StoredAtm`]).

use serde::{Deserialize, Serialize};

/// ATM services (OBIE code list `ATMServices`). Read by code name or by the code
/// list's four-letter code (`ATBA`, as in OBIE's ATM 2.3 data dictionary
/// and Mexico's CNBV standard); always written by code name.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AtmService {
    #[serde(alias = "ATBA")]
    Balance,
    #[serde(alias = "ATBP")]
    BillPayments,
    #[serde(alias = "ATCA")]
    CashDeposits,
    #[serde(alias = "ATCD")]
    CharityDonation,
    #[serde(alias = "ATCQ")]
    ChequeDeposits,
    #[serde(alias = "ATCW")]
    CashWithdrawal,
    #[serde(alias = "ATED")]
    EnvelopeDeposit,
    #[serde(alias = "ATFC")]
    FastCash,
    #[serde(alias = "ATMB")]
    MobileBankingRegistration,
    #[serde(alias = "ATMP")]
    MobilePaymentRegistration,
    #[serde(alias = "ATMT")]
    MobilePhoneTopUp,
    #[serde(alias = "ATOS")]
    OrderStatement,
    #[serde(alias = "ATOT")]
    Other,
    #[serde(rename = "PINActivation", alias = "ATPA")]
    PinActivation,
    #[serde(rename = "PINChange", alias = "ATPC")]
    PinChange,
    #[serde(rename = "PINUnblock", alias = "ATPU")]
    PinUnblock,
    #[serde(alias = "ATTS")]
    MiniStatement,
}

impl AtmService {
    /// Its OBIE code name, as it is written (`CashWithdrawal`, `PINChange`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Balance => "Balance",
            Self::BillPayments => "BillPayments",
            Self::CashDeposits => "CashDeposits",
            Self::CharityDonation => "CharityDonation",
            Self::ChequeDeposits => "ChequeDeposits",
            Self::CashWithdrawal => "CashWithdrawal",
            Self::EnvelopeDeposit => "EnvelopeDeposit",
            Self::FastCash => "FastCash",
            Self::MobileBankingRegistration => "MobileBankingRegistration",
            Self::MobilePaymentRegistration => "MobilePaymentRegistration",
            Self::MobilePhoneTopUp => "MobilePhoneTopUp",
            Self::OrderStatement => "OrderStatement",
            Self::Other => "Other",
            Self::PinActivation => "PINActivation",
            Self::PinChange => "PINChange",
            Self::PinUnblock => "PINUnblock",
            Self::MiniStatement => "MiniStatement",
        }
    }
}

/// Accessibility features (OBIE code list `Accessibility`), read by code name or
/// four-letter code (`ATAC`), written by code name.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Accessibility {
    #[serde(alias = "ATAC")]
    AudioCashMachine,
    #[serde(alias = "ATAD")]
    AutomaticDoors,
    #[serde(alias = "ATER")]
    ExternalRamp,
    #[serde(alias = "ATIL")]
    InductionLoop,
    #[serde(alias = "ATIR")]
    InternalRamp,
    #[serde(alias = "ATLA")]
    LevelAccess,
    #[serde(alias = "ATLL")]
    LowerLevelCounter,
    #[serde(alias = "ATOT")]
    Other,
    #[serde(alias = "ATWA")]
    WheelchairAccess,
}
/// Declares the bit of each code in a set of codes, for fast filtering.
macro_rules! code_bits {
    ($name:ident: $($variant:ident),+) => {
        impl $name {
            /// Every code, in the order of the bits of [`Self::bit`].
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// This code's bit in a set of codes.
            pub fn bit(self) -> u32 {
                1 << (self as u32)
            }

            /// Parses the OBIE name of a code (`CashWithdrawal`, `PINChange`).
            pub fn parse(name: &str) -> Option<Self> {
                serde::Deserialize::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name)).ok()
            }
        }
    };
}

code_bits!(AtmService: Balance, BillPayments, CashDeposits, CharityDonation, ChequeDeposits, CashWithdrawal,
    EnvelopeDeposit, FastCash, MobileBankingRegistration, MobilePaymentRegistration, MobilePhoneTopUp,
    OrderStatement, Other, PinActivation, PinChange, PinUnblock, MiniStatement);
code_bits!(Accessibility: AudioCashMachine, AutomaticDoors, ExternalRamp, InductionLoop, InternalRamp,
    LevelAccess, LowerLevelCounter, Other, WheelchairAccess);
#[cfg(test)]
mod tests {
    use super::*;

    /// Stores keep these bits beside each record: a code's bit never changes, and a new
    /// code gets the next free bit (it goes at the end of its `code_bits!` list).
    #[test]
    fn the_stored_bit_of_every_code_is_fixed() {
        let services: Vec<u32> = AtmService::ALL.iter().map(|code| code.bit().trailing_zeros()).collect();
        assert_eq!(services, (0..17).collect::<Vec<_>>());
        assert_eq!((AtmService::Balance.bit(), AtmService::CashWithdrawal.bit()), (1, 1 << 5));
        assert_eq!((AtmService::PinChange.bit(), AtmService::MiniStatement.bit()), (1 << 14, 1 << 16));
        assert_eq!((Accessibility::AudioCashMachine.bit(), Accessibility::WheelchairAccess.bit()), (1, 1 << 8));
        assert_eq!(Accessibility::LevelAccess.bit(), 1 << 5);
    }

    #[test]
    fn codes_are_read_by_their_four_letter_codes_and_written_by_name() {
        let read: Vec<AtmService> = serde_json::from_str(r#"["ATBA","ATPC","CashWithdrawal","ATTS"]"#).unwrap();
        assert_eq!(
            read,
            [AtmService::Balance, AtmService::PinChange, AtmService::CashWithdrawal, AtmService::MiniStatement]
        );
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"["Balance","PINChange","CashWithdrawal","MiniStatement"]"#
        );
        let read: Vec<Accessibility> = serde_json::from_str(r#"["ATWA","ATOT"]"#).unwrap();
        assert_eq!(read, [Accessibility::WheelchairAccess, Accessibility::Other]);
        assert!(serde_json::from_str::<AtmService>(r#""ATZZ""#).is_err());
    }

    #[test]
    fn codes_parse_by_their_obie_names() {
        assert_eq!(AtmService::parse("PINChange"), Some(AtmService::PinChange));
        assert_eq!(Accessibility::parse("WheelchairAccess"), Some(Accessibility::WheelchairAccess));
        assert_eq!(AtmService::parse("PinChange"), None);
        assert_eq!(AtmService::ALL.len(), 17);
        for &code in AtmService::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.name(), "named as serde writes it");
            assert_eq!(AtmService::parse(code.name()), Some(code));
        }
    }
}
