//! OBIE ATM 2.3 records as the wire writes them, field for field as
//! `docs/reference/obie-atml.2.3.0.swagger.json`: the edge's reader for `atms import`.
//!
//! Every length, count and pattern limit of that schema is enforced when a record is
//! deserialized, so a value of [`Atm`] is valid by construction and every ATM the
//! service returns validates against the schema. Unknown fields are refused on input
//! (the schema would allow them, but an import that silently drops a misspelt field
//! loses data). Coordinates are also range-checked, which the schema does not do, and
//! no text holds a control character, which the schema allows (see [`Text`]).
//! A valid record becomes the domain's [`StoredAtm`] once, by [`Atm::stored`].

use std::fmt;

use domain::atm::{Accessibility, AtmService};
use domain::atm_catalog::StoredAtm;
use domain::text::Hidden;
use serde::{Deserialize, Serialize};

use super::shown::quoted;

/// Why a field of an ATM record was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AtmFieldError(String);

/// A string of `MIN` to `MAX` characters (JSON Schema lengths count code points), none
/// of them a control character, and for an identification or a code (`CODE`) none that
/// is not seen as itself ([`domain::text::Hidden`]).
///
/// Control characters are every one of Unicode's `Cc`: C0 (U+0000 to U+001F, tab and
/// newline included), DEL (U+007F) and C1 (U+0080 to U+009F). The schema allows them, but
/// no identification, name, address or note needs one, and each does harm: U+0000 is
/// stored by SQLite and refused by PostgreSQL (so a set could not move between them), an
/// escape sequence drives the terminal of the operator shown it, a newline splits a
/// one-line answer. Tab is refused with the rest: real feeds hold none (HSBC UK's 780
/// ATMs hold no control character at all; docs/adr/0032-text-rules-for-feeds.md), and a tab in a name is as
/// much a mistake as a newline. An identification also holds no format character (a
/// right-to-left override shows it reversed, a zero-width space makes two that look
/// alike) nor line separator; a name or a note may need a joiner or a direction mark,
/// and is shown escaped to operators instead ([`super::shown::escaped`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Text<const MIN: usize, const MAX: usize, const CODE: bool = false>(String);

impl<const MIN: usize, const MAX: usize, const CODE: bool> Text<MIN, MAX, CODE> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize, const CODE: bool> TryFrom<String> for Text<MIN, MAX, CODE> {
    type Error = AtmFieldError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        let length = value.chars().count();
        if !(MIN..=MAX).contains(&length) {
            return Err(AtmFieldError(format!("length {length} is outside {MIN} to {MAX} characters")));
        }
        let refused = value.chars().enumerate().find_map(|(at, c)| {
            Hidden::of(c).filter(|hidden| CODE || *hidden == Hidden::Control).map(|hidden| (at, c, hidden))
        });
        match refused {
            None => Ok(Self(value)),
            Some((at, c, hidden)) => Err(AtmFieldError(format!(
                "character {} is {} U+{:04X}, which no {} of an ATM may hold",
                at + 1,
                hidden.name(),
                u32::from(c),
                if CODE { "identification or code" } else { "text" }
            ))),
        }
    }
}

impl<const MIN: usize, const MAX: usize, const CODE: bool> From<Text<MIN, MAX, CODE>> for String {
    fn from(text: Text<MIN, MAX, CODE>) -> Self {
        text.0
    }
}

impl<const MIN: usize, const MAX: usize, const CODE: bool> fmt::Display for Text<MIN, MAX, CODE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A list of `MIN` to `MAX` items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<T>", into = "Vec<T>")]
#[serde(bound(serialize = "T: Serialize + Clone", deserialize = "T: Deserialize<'de>"))]
pub struct List<T, const MIN: usize, const MAX: usize>(Vec<T>);

impl<T, const MIN: usize, const MAX: usize> List<T, MIN, MAX> {
    /// The items.
    pub fn items(&self) -> &[T] {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T, const MIN: usize, const MAX: usize> Default for List<T, MIN, MAX> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T, const MIN: usize, const MAX: usize> TryFrom<Vec<T>> for List<T, MIN, MAX> {
    type Error = AtmFieldError;
    fn try_from(items: Vec<T>) -> Result<Self, Self::Error> {
        if (MIN..=MAX).contains(&items.len()) {
            Ok(Self(items))
        } else {
            Err(AtmFieldError(format!("{} items is outside {MIN} to {MAX}", items.len())))
        }
    }
}

impl<T, const MIN: usize, const MAX: usize> From<List<T, MIN, MAX>> for Vec<T> {
    fn from(list: List<T, MIN, MAX>) -> Self {
        list.0
    }
}

/// No upper bound on a list's length (the schema gives none).
pub const UNBOUNDED: usize = usize::MAX;

/// Declares a string newtype checked by `$valid`, serialized as the string.
macro_rules! pattern_string {
    ($(#[$doc:meta])* $name:ident, $what:literal, $valid:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The value as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = AtmFieldError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                let valid: fn(&str) -> bool = $valid;
                if valid(&value) {
                    Ok(Self(value))
                } else {
                    Err(AtmFieldError(format!("{} is not {}", quoted(&value), $what)))
                }
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> Self {
                value.0
            }
        }
    };
}

/// An ISO 639-1 language code: two lower-case letters (schema: `[a-z]{2}`). Read also
/// as ISO 639-2, bibliographic or terminology form (`eng`, `ger` or `deu`), as OBIE ATM
/// 2.2 allowed and UK banks still publish it, then kept as the ISO 639-1 code of the same
/// language; a three-letter code without one is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LanguageCode(String);

impl LanguageCode {
    /// The two-letter code.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for LanguageCode {
    type Error = AtmFieldError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.len() == 2 && value.bytes().all(|b| b.is_ascii_lowercase()) {
            return Ok(Self(value));
        }
        if value.len() == 3 && value.bytes().all(|b| b.is_ascii_lowercase()) {
            return match iso_639_1_of(&value) {
                Some(two) => Ok(Self(two.to_owned())),
                None => Err(AtmFieldError(format!("{} is an ISO 639-2 code with no ISO 639-1 code", quoted(&value)))),
            };
        }
        Err(AtmFieldError(format!(
            "{} is not a language code (ISO 639-1 such as \"en\", or ISO 639-2 such as \"eng\")",
            quoted(&value)
        )))
    }
}

impl From<LanguageCode> for String {
    fn from(value: LanguageCode) -> Self {
        value.0
    }
}

/// ISO 639-2's bibliographic codes that differ from its terminology codes (the
/// twenty of the Library of Congress's list), as (B, T).
const ISO_639_2_B_TO_T: [(&str, &str); 20] = [
    ("alb", "sqi"),
    ("arm", "hye"),
    ("baq", "eus"),
    ("bur", "mya"),
    ("chi", "zho"),
    ("cze", "ces"),
    ("dut", "nld"),
    ("fre", "fra"),
    ("geo", "kat"),
    ("ger", "deu"),
    ("gre", "ell"),
    ("ice", "isl"),
    ("mac", "mkd"),
    ("mao", "mri"),
    ("may", "msa"),
    ("per", "fas"),
    ("rum", "ron"),
    ("slo", "slk"),
    ("tib", "bod"),
    ("wel", "cym"),
];

/// The ISO 639-1 code of an ISO 639-2 code (B or T form). ISO 639-2/T codes are ISO
/// 639-3 codes, which `isolang` maps; the B forms are translated to T first.
fn iso_639_1_of(code: &str) -> Option<&'static str> {
    let terminology = ISO_639_2_B_TO_T.iter().find(|(b, _)| *b == code).map_or(code, |(_, t)| *t);
    isolang::Language::from_639_3(terminology)?.to_639_1()
}
pattern_string!(
    /// An ISO 4217 currency code: three upper-case letters (schema: `[A-Z]{3}`).
    CurrencyCode,
    "three upper-case letters",
    |v| v.len() == 3 && v.bytes().all(|b| b.is_ascii_uppercase())
);
pattern_string!(
    /// An ISO 3166-1 alpha-2 country (schema: `[A-Z]{2}`).
    Country,
    "two upper-case letters",
    |v| v.len() == 2 && v.bytes().all(|b| b.is_ascii_uppercase())
);
pattern_string!(
    /// An amount (schema: `^-?\d{1,10}\.?\d{0,2}$`).
    Amount,
    "an amount such as 100.00",
    is_amount
);
pattern_string!(
    /// A code of up to four word characters (schema: `^\w{0,4}$`).
    ShortCode,
    "up to 4 letters, digits or '_'",
    |v| v.chars().count() <= 4 && v.chars().all(|c| c.is_alphanumeric() || c == '_')
);

fn is_amount(value: &str) -> bool {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (digits, ""),
    };
    (1..=10).contains(&whole.len())
        && fraction.len() <= 2
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

/// A latitude or longitude as OBIE writes it (`^-?\d{1,3}\.\d{1,8}$`), kept as written
/// and as a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Degrees {
    written: String,
    value: f64,
}

impl Degrees {
    /// The angle in degrees.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The angle as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// Parses a coordinate within `-limit..=limit` degrees.
    fn parse(written: String, limit: f64) -> Result<Self, AtmFieldError> {
        let digits = written.strip_prefix('-').unwrap_or(&written);
        let shaped = digits.split_once('.').is_some_and(|(whole, fraction)| {
            (1..=3).contains(&whole.len())
                && (1..=8).contains(&fraction.len())
                && whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit())
        });
        let value = written.parse::<f64>().ok().filter(|v| shaped && v.abs() <= limit);
        match value {
            Some(value) => Ok(Self { written, value }),
            None => Err(AtmFieldError(format!(
                "{} is not a coordinate such as 19.43260770 within ±{limit} degrees",
                quoted(&written)
            ))),
        }
    }
}

impl TryFrom<String> for Degrees {
    type Error = AtmFieldError;
    fn try_from(written: String) -> Result<Self, Self::Error> {
        // The wider of the two ranges; `GeographicCoordinates` checks latitude's.
        Self::parse(written, 180.0)
    }
}

impl From<Degrees> for String {
    fn from(degrees: Degrees) -> Self {
        degrees.written
    }
}
/// Where an ATM stands (OBIE code list `LocationCategory`), read by code name or
/// four-letter code (`ATBE`), written by code name.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LocationCategory {
    #[serde(alias = "ATBE")]
    BranchExternal,
    #[serde(alias = "ATBI")]
    BranchInternal,
    #[serde(alias = "ATBL")]
    BranchLobby,
    #[serde(alias = "ATOT")]
    Other,
    #[serde(alias = "ATRO")]
    RetailerOutlet,
    #[serde(alias = "ATRU")]
    RemoteUnit,
}
/// A code not in a code list, with its name and description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct OtherCode {
    /// Optional short code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ShortCode>,
    /// Name, 1 to 70 characters.
    pub name: Text<1, 70>,
    /// Description, 1 to 350 characters.
    pub description: Text<1, 350>,
}

/// An identification of 1 to 35 characters (ATM, branch, site).
pub type Identification = Text<1, 35, true>;

/// The branch an ATM belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct BranchRef {
    /// The branch's identification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identification: Option<Identification>,
}

/// The site an ATM is at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Site {
    /// Site identification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identification: Option<Identification>,
    /// Site name, 1 to 140 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Text<1, 140>>,
}

/// Latitude and longitude.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields, try_from = "RawCoordinates")]
pub struct GeographicCoordinates {
    /// Latitude, −90 to 90.
    pub latitude: Degrees,
    /// Longitude, −180 to 180.
    pub longitude: Degrees,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RawCoordinates {
    latitude: Degrees,
    longitude: Degrees,
}

impl TryFrom<RawCoordinates> for GeographicCoordinates {
    type Error = AtmFieldError;
    fn try_from(raw: RawCoordinates) -> Result<Self, Self::Error> {
        let latitude = Degrees::parse(raw.latitude.written, 90.0)?;
        Ok(Self { latitude, longitude: raw.longitude })
    }
}

/// Where on the globe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct GeoLocation {
    /// The coordinates.
    pub geographic_coordinates: GeographicCoordinates,
}

/// A postal address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct PostalAddress {
    /// Up to 7 lines of 1 to 70 characters.
    #[serde(default, skip_serializing_if = "List::is_empty")]
    pub address_line: List<Text<1, 70>, 0, 7>,
    /// Building number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub building_number: Option<Text<1, 350>>,
    /// Street.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub street_name: Option<Text<1, 70>>,
    /// Town.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub town_name: Option<Text<1, 35>>,
    /// Up to 2 subdivisions (state, municipality).
    #[serde(default, skip_serializing_if = "List::is_empty")]
    pub country_sub_division: List<Text<1, 35>, 0, 2>,
    /// Country.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<Country>,
    /// Post code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_code: Option<Text<1, 16, true>>,
    /// Coordinates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo_location: Option<GeoLocation>,
}

/// Where an ATM is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Location {
    /// Location categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub location_category: Vec<LocationCategory>,
    /// Categories outside the code list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_location_category: Vec<OtherCode>,
    /// The site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<Site>,
    /// The address (required).
    pub postal_address: PostalAddress,
}

/// One ATM (OBIE ATM 2.3 `ATM` item).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Atm {
    /// Terminal identification, 1 to 35 characters.
    pub identification: Identification,
    /// Languages the ATM offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_languages: Vec<LanguageCode>,
    /// Services it offers.
    #[serde(rename = "ATMServices", default, skip_serializing_if = "Vec::is_empty")]
    pub atm_services: Vec<AtmService>,
    /// Accessibility features.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accessibility: Vec<Accessibility>,
    /// Open around the clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access24_hours_indicator: Option<bool>,
    /// Currencies it dispenses (at least one).
    pub supported_currencies: List<CurrencyCode, 1, UNBOUNDED>,
    /// Smallest amount it dispenses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_possible_amount: Option<Amount>,
    /// Notes of 1 to 2000 characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub note: Vec<Text<1, 2000>>,
    /// Accessibility outside the code list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_accessibility: Vec<OtherCode>,
    /// Services outside the code list.
    #[serde(rename = "OtherATMServices", default, skip_serializing_if = "Vec::is_empty")]
    pub other_atm_services: Vec<OtherCode>,
    /// The branch it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchRef>,
    /// Where it is.
    pub location: Location,
}

impl Atm {
    /// Its coordinates as (latitude, longitude) degrees, if it has any.
    pub fn coordinates(&self) -> Option<(f64, f64)> {
        self.location
            .postal_address
            .geo_location
            .as_ref()
            .map(|geo| (geo.geographic_coordinates.latitude.value(), geo.geographic_coordinates.longitude.value()))
    }

    /// This record of `brand` in the domain's stored form: written as compact JSON once,
    /// beside the codes and coordinates listings select and order by.
    ///
    /// # Errors
    /// A [`serde_json::Error`] if the record cannot be written as JSON, which a valid
    /// [`Atm`] never causes (it holds only strings, numbers, booleans and lists).
    pub fn stored(&self, brand: &str) -> Result<StoredAtm, serde_json::Error> {
        Ok(StoredAtm::new(
            brand,
            self.identification.as_str(),
            serde_json::to_string(self)?,
            &self.atm_services,
            &self.accessibility,
            self.coordinates(),
        ))
    }
}

/// The name of a brand, 1 to 140 characters (spec: BrandName).
pub type BrandName = Text<1, 140>;

/// A brand and its ATMs (OBIE `Brand` item: at least one ATM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brand {
    /// The brand's name.
    #[serde(rename = "BrandName")]
    pub name: BrandName,
    /// Its ATMs.
    #[serde(rename = "ATM")]
    pub atms: List<Atm, 1, UNBOUNDED>,
}
#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> serde_json::Value {
        serde_json::json!({
            "Identification": "BNK-CDMX-0001",
            "SupportedLanguages": ["es", "en"],
            "ATMServices": ["CashWithdrawal", "Balance", "PINChange"],
            "Accessibility": ["WheelchairAccess"],
            "Access24HoursIndicator": true,
            "SupportedCurrencies": ["MXN"],
            "MinimumPossibleAmount": "100.00",
            "Note": ["Inside the lobby"],
            "Branch": {"Identification": "00042"},
            "Location": {
                "LocationCategory": ["BranchLobby"],
                "Site": {"Identification": "S1", "Name": "Reforma"},
                "PostalAddress": {
                    "AddressLine": ["Paseo de la Reforma 222"],
                    "TownName": "Ciudad de México",
                    "CountrySubDivision": ["CDMX"],
                    "Country": "MX",
                    "PostCode": "06600",
                    "GeoLocation": {"GeographicCoordinates": {"Latitude": "19.4326077", "Longitude": "-99.133208"}}
                }
            }
        })
    }

    fn parse(value: serde_json::Value) -> Result<Atm, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn an_obie_record_round_trips_unchanged() {
        let atm = parse(record()).unwrap();
        assert_eq!(serde_json::to_value(&atm).unwrap(), record());
        assert_eq!(atm.coordinates(), Some((19.4326077, -99.133208)));
    }

    #[test]
    fn a_record_is_stored_as_its_compact_json_beside_its_codes_and_coordinates() {
        let stored = parse(record()).unwrap().stored("Banco").unwrap();
        assert_eq!((stored.brand.as_str(), stored.identification.as_str()), ("Banco", "BNK-CDMX-0001"));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&stored.record).unwrap(), record());
        assert!(!stored.record.contains(' ') || stored.record.contains("Paseo de la"), "compact");
        let services = AtmService::CashWithdrawal.bit() | AtmService::Balance.bit() | AtmService::PinChange.bit();
        assert_eq!((stored.services, stored.accessibility), (services, Accessibility::WheelchairAccess.bit()));
        assert_eq!(stored.coordinates, Some((19.4326077, -99.133208)));
    }

    #[test]
    fn three_letter_languages_are_kept_as_their_two_letter_codes_and_four_letter_codes_as_names() {
        let mut v22 = record();
        v22["SupportedLanguages"] = serde_json::json!(["eng", "spa", "ger", "fre", "deu", "cy"]);
        v22["ATMServices"] = serde_json::json!(["ATCW", "ATBA", "PINChange"]);
        v22["Accessibility"] = serde_json::json!(["ATWA"]);
        v22["Location"]["LocationCategory"] = serde_json::json!(["ATBE"]);
        let atm: Atm = serde_json::from_value(v22).unwrap();
        let written = serde_json::to_value(&atm).unwrap();
        assert_eq!(written["SupportedLanguages"], serde_json::json!(["en", "es", "de", "fr", "de", "cy"]));
        assert_eq!(written["ATMServices"], serde_json::json!(["CashWithdrawal", "Balance", "PINChange"]));
        assert_eq!(written["Accessibility"], serde_json::json!(["WheelchairAccess"]));
        assert_eq!(written["Location"]["LocationCategory"], serde_json::json!(["BranchExternal"]));
    }

    #[test]
    fn code_lists_are_enforced() {
        let mut bad = record();
        bad["ATMServices"] = serde_json::json!(["CashWithdrawl"]);
        assert!(parse(bad).unwrap_err().contains("unknown variant"));
    }

    #[test]
    fn lengths_counts_and_patterns_are_enforced() {
        let cases: [(&str, serde_json::Value); 8] = [
            ("/Identification", serde_json::json!("x".repeat(36))),
            ("/SupportedCurrencies", serde_json::json!([])),
            ("/SupportedLanguages", serde_json::json!(["ESP"])),
            ("/SupportedLanguages", serde_json::json!(["cmn"])),
            ("/SupportedLanguages", serde_json::json!(["afa"])),
            ("/MinimumPossibleAmount", serde_json::json!("10.005")),
            ("/Location/PostalAddress/AddressLine", serde_json::json!(["1", "2", "3", "4", "5", "6", "7", "8"])),
            ("/Location/PostalAddress/GeoLocation/GeographicCoordinates/Latitude", serde_json::json!("91.0")),
        ];
        for (pointer, value) in cases {
            let mut bad = record();
            *bad.pointer_mut(pointer).unwrap() = value;
            assert!(parse(bad).is_err(), "{pointer}");
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        let mut bad = record();
        bad["ATMService"] = serde_json::json!(["Balance"]);
        assert!(parse(bad).unwrap_err().contains("unknown field"));
    }

    #[test]
    fn a_control_character_in_any_text_of_a_record_is_refused_naming_it() {
        let texts = [
            "/Identification",
            "/Note/0",
            "/Branch/Identification",
            "/Location/Site/Name",
            "/Location/PostalAddress/AddressLine/0",
            "/Location/PostalAddress/TownName",
            "/Location/PostalAddress/PostCode",
        ];
        for pointer in texts {
            for control in ['\u{0}', '\u{1b}', '\n', '\t', '\u{7f}', '\u{85}'] {
                let mut bad = record();
                let text = format!("A{control}B");
                *bad.pointer_mut(pointer).unwrap() = serde_json::json!(text);
                let error = parse(bad).unwrap_err();
                let code = format!("U+{:04X}", u32::from(control));
                assert!(error.contains(&format!("character 2 is the control character {code}")), "{pointer}: {error}");
            }
        }
        let brand = serde_json::json!({"BrandName": "Banco\u{0}", "ATM": [record()]});
        assert!(serde_json::from_value::<Brand>(brand).unwrap_err().to_string().contains("U+0000"));
        let mut fine = record();
        fine["Note"] = serde_json::json!(["Zócalo, ‘Reforma’ — 24 h €"]);
        assert!(parse(fine).is_ok(), "characters that are not control characters are kept");
    }

    /// Issue 42: an `Identification` holding a right-to-left override was imported, and
    /// `atms import --dry-run` printed it reading in another order than it is.
    #[test]
    fn a_format_character_or_line_separator_is_refused_in_an_identification_and_kept_in_a_free_text() {
        let codes = ["/Identification", "/Branch/Identification", "/Location/PostalAddress/PostCode"];
        for pointer in codes {
            for (hidden, name) in [
                ('\u{202e}', "the format character U+202E"),
                ('\u{200b}', "the format character U+200B"),
                ('\u{2028}', "the line or paragraph separator U+2028"),
            ] {
                let mut bad = record();
                *bad.pointer_mut(pointer).unwrap() = serde_json::json!(format!("A{hidden}B"));
                let error = parse(bad).unwrap_err();
                assert!(
                    error.contains(&format!(
                        "character 2 is {name}, which no identification or code of an ATM may hold"
                    )),
                    "{pointer}: {error}"
                );
            }
        }
        let mut free = record();
        // A Persian word's zero-width non-joiner, an Arabic right-to-left mark.
        free["Note"] = serde_json::json!(["می\u{200c}خواهم", "\u{200f}صراف آلي"]);
        free["Location"]["Site"]["Name"] = serde_json::json!("Centro\u{2028}Norte");
        assert!(parse(free).is_ok(), "a free text keeps what a language may need");
    }

    #[test]
    fn a_bad_value_is_quoted_by_its_first_64_characters_whatever_its_length() {
        let mut bad = record();
        bad["MinimumPossibleAmount"] = serde_json::json!("9".repeat(10 * 1024 * 1024));
        let error = parse(bad).unwrap_err();
        assert!(error.len() < 300 && error.contains("… (10485760 characters) is not an amount"), "{error}");
    }

    #[test]
    fn text_lengths_count_characters_not_bytes() {
        let town: Text<1, 35> = Text::try_from("Ñ".repeat(35)).unwrap();
        assert_eq!(town.as_str().chars().count(), 35);
    }
}
