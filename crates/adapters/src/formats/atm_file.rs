//! Reading an OBIE ATM file (`{"meta":…,"data":[{"Brand":[{"BrandName":…,"ATM":[…]}]}]}`,
//! as UK banks publish it, version 2.2 or 2.3) into validated records in the domain's
//! stored form, with warnings about records that are valid but suspicious; and writing
//! the stored set back out as an OBIE ATM 2.3 file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::sync::OnceLock;

use country_boundaries::{BOUNDARIES_ODBL_60X30, CountryBoundaries, LatLon};
use domain::atm_catalog::{MAX_RECORD_BYTES, StoredAtm};
use domain::services::imports::AtmFeed;
use serde::Deserialize;
use serde_path_to_error::Segment;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::obie::{Atm, Brand, List, UNBOUNDED};
use super::shown::{self, quoted};

/// The file's envelope. Of `meta` only the publisher's `LastUpdated` is read (the
/// import's shrink guard looks at it); the set's own date is the import's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtmFile {
    #[serde(default)]
    meta: Option<Meta>,
    data: Vec<DataItem>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "LastUpdated", default)]
    last_updated: Option<String>,
}

/// A file read: the feed for the import, and what looked wrong without being invalid.
#[derive(Debug)]
pub struct ReadFeed {
    /// The records and the publisher's date.
    pub feed: AtmFeed,
    /// Suspicious records, one line each.
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataItem {
    #[serde(rename = "Brand")]
    brand: List<Brand, 1, UNBOUNDED>,
}

/// Why a file was refused: the position of the record and the field, then the reason,
/// on one line: a value from the file is quoted by its first characters, escaped
/// ([`shown`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AtmFileError(String);

/// Parses and validates a whole ATM file, each record then written in stored form
/// once (code names, two-letter languages: ATM 2.3 whatever the file's version). A brand
/// may be named more than once; an ATM identification repeated within a brand is
/// refused.
///
/// # Errors
/// [`AtmFileError`] naming the first invalid record by its path in the file
/// (`data[0].Brand[1].ATM[17]`) and the field within it; a record over
/// [`MAX_RECORD_BYTES`] by its path and identification.
pub fn read(input: impl Read) -> Result<ReadFeed, AtmFileError> {
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(input));
    let file: AtmFile = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = path_of(error.path());
        let at = if path.is_empty() { String::new() } else { format!("at {path}: ") };
        AtmFileError(format!("{at}{}", shown::reason(&error.inner().to_string())))
    })?;
    json.end().map_err(|e| AtmFileError(shown::reason(&e.to_string())))?;
    let published = match file.meta.and_then(|meta| meta.last_updated) {
        Some(written) => Some(
            OffsetDateTime::parse(&written, &Rfc3339)
                .map_err(|_| {
                    AtmFileError(format!("at meta.LastUpdated: {} is not an RFC 3339 time", quoted(&written)))
                })?
                .unix_timestamp(),
        ),
        None => None,
    };

    let mut atms = Vec::new();
    let mut seen: HashMap<(&str, &str), String> = HashMap::new();
    let mut checks = Checks::default();
    for (d, item) in file.data.iter().enumerate() {
        for (b, brand) in item.brand.items().iter().enumerate() {
            let name = brand.name.as_str();
            for (a, atm) in brand.atms.items().iter().enumerate() {
                let here = format!("data[{d}].Brand[{b}].ATM[{a}]");
                if let Some(first) = seen.insert((name, atm.identification.as_str()), here.clone()) {
                    return Err(AtmFileError(format!(
                        "at {here}.Identification: {} of brand {} was already given at {first}",
                        quoted(atm.identification.as_str()),
                        quoted(name)
                    )));
                }
                checks.look_at(name, atm);
                let stored = atm.stored(name).map_err(|e| AtmFileError(format!("at {here}: {e}")))?;
                if stored.record.len() > MAX_RECORD_BYTES {
                    return Err(AtmFileError(format!(
                        "at {here} (Identification {}): the record takes {} bytes as compact JSON, over the {} \
                         bytes an ATM may take",
                        quoted(atm.identification.as_str()),
                        stored.record.len(),
                        MAX_RECORD_BYTES
                    )));
                }
                atms.push(stored);
            }
        }
    }
    Ok(ReadFeed { feed: AtmFeed { atms, published }, warnings: checks.warnings() })
}

/// Where in the file a parser stopped, as `data[0].Brand[1].ATM[17].Location`; a field's
/// name is the file's own (an unknown field is named by it), so it is shown as an
/// [`shown::excerpt`].
fn path_of(path: &serde_path_to_error::Path) -> String {
    let mut shown = String::new();
    for segment in path.iter() {
        let name = match segment {
            Segment::Seq { index } => {
                shown.push_str(&format!("[{index}]"));
                continue;
            }
            Segment::Map { key } => shown::excerpt(key),
            Segment::Enum { variant } => shown::excerpt(variant),
            Segment::Unknown => "?".to_owned(),
        };
        if !shown.is_empty() {
            shown.push('.');
        }
        shown.push_str(&name);
    }
    shown
}

/// Shared points listed per warning, at most.
const SHOWN: usize = 5;

/// Warnings of each kind listed one per line, at most; the rest are counted.
const LISTED: usize = 20;

/// Valid records that look wrong: ATMs at different addresses at one point (a
/// placeholder), an ATM outside the country of its address (a sign flipped, latitude
/// and longitude swapped).
#[derive(Default)]
struct Checks {
    /// Per point: the ATMs there, and the addresses they give.
    at_point: BTreeMap<(String, String), (Vec<String>, BTreeSet<String>)>,
    outside: Vec<String>,
}

impl Checks {
    fn look_at(&mut self, brand: &str, atm: &Atm) {
        let address = &atm.location.postal_address;
        let Some(point) = address.geo_location.as_ref().map(|at| &at.geographic_coordinates) else { return };
        let id = format!("{brand}/{}", atm.identification.as_str());
        let key = (point.latitude.as_str().to_owned(), point.longitude.as_str().to_owned());
        // Several machines in one branch share its point and its address; a placeholder
        // point is shared by ATMs at different addresses.
        let place = [address.post_code.as_ref().map(|c| c.as_str()), address.street_name.as_ref().map(|s| s.as_str())]
            .map(Option::unwrap_or_default)
            .join("|");
        let (ids, places) = self.at_point.entry(key).or_default();
        ids.push(id.clone());
        places.insert(place);
        let (Some(country), Some(boundaries)) = (&address.country, boundaries()) else { return };
        let inside = LatLon::new(point.latitude.value(), point.longitude.value())
            .is_ok_and(|at| boundaries.is_in(at, country.as_str()));
        if !inside {
            self.outside.push(format!(
                "{id}: its coordinates ({}, {}) lie outside its country {}",
                point.latitude.as_str(),
                point.longitude.as_str(),
                country.as_str()
            ));
        }
    }

    fn warnings(self) -> Vec<String> {
        let shared: Vec<String> = self
            .at_point
            .into_iter()
            .filter(|(_, (_, places))| places.len() > 1)
            .map(|((latitude, longitude), (ids, places))| {
                let more = if ids.len() > SHOWN { format!(" and {} more", ids.len() - SHOWN) } else { String::new() };
                let shown = ids.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
                format!(
                    "{} ATMs at {} different addresses share the point ({latitude}, {longitude}), a placeholder?: \
                     {shown}{more}",
                    ids.len(),
                    places.len()
                )
            })
            .collect();
        let mut warnings = capped(shared.into_iter(), LISTED, "points shared by ATMs at different addresses");
        warnings.extend(capped(self.outside.into_iter(), LISTED, "ATMs outside their country"));
        warnings
    }
}

/// The first `listed` of `lines`, then one line counting the rest as `what`.
fn capped(lines: impl ExactSizeIterator<Item = String>, listed: usize, what: &str) -> Vec<String> {
    let total = lines.len();
    let mut kept: Vec<String> = lines.take(listed).collect();
    if total > listed {
        kept.push(format!("and {} more {what}", total - listed));
    }
    kept
}

/// Country boundaries from OpenStreetMap (ODbL, © OpenStreetMap contributors), read once.
fn boundaries() -> Option<&'static CountryBoundaries> {
    static BOUNDARIES: OnceLock<Option<CountryBoundaries>> = OnceLock::new();
    BOUNDARIES.get_or_init(|| CountryBoundaries::from_reader(BOUNDARIES_ODBL_60X30).ok()).as_ref()
}

/// Writes `atms` (stored, in brand then identification order) as an OBIE ATM 2.3 file
/// dated `last_updated`: each record's stored text as it is, grouped by brand. Reading
/// it back gives the same records.
///
/// # Errors
/// The writer's I/O error.
pub fn write(atms: &[StoredAtm], last_updated: i64, mut out: impl Write) -> std::io::Result<()> {
    let date = OffsetDateTime::from_unix_timestamp(last_updated)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned());
    write!(out, r#"{{"meta":{{"LastUpdated":{},"TotalResults":{}}},"data":[{{"Brand":["#, json(&date), atms.len())?;
    let mut brands = atms.chunk_by(|a, b| a.brand == b.brand).peekable();
    while let Some(brand) = brands.next() {
        write!(out, r#"{{"BrandName":{},"ATM":["#, json(&brand[0].brand))?;
        for (n, atm) in brand.iter().enumerate() {
            if n > 0 {
                out.write_all(b",")?;
            }
            out.write_all(atm.record.as_bytes())?;
        }
        out.write_all(if brands.peek().is_some() { b"]}," } else { b"]}" })?;
    }
    out.write_all(b"]}]}\n")?;
    out.flush()
}

fn json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atm(id: &str) -> serde_json::Value {
        serde_json::json!({
            "Identification": id,
            "SupportedCurrencies": ["MXN"],
            "Location": {"PostalAddress": {"TownName": "Puebla", "Country": "MX"}}
        })
    }

    fn file(brands: serde_json::Value) -> String {
        serde_json::json!({"meta": {"TotalResults": 1}, "data": [{"Brand": brands}]}).to_string()
    }

    #[test]
    fn a_valid_file_gives_every_atm_of_every_brand_however_often_a_brand_is_named() {
        let text = file(serde_json::json!([
            {"BrandName": "Uno", "ATM": [atm("A1")]},
            {"BrandName": "Dos", "ATM": [atm("B1")]},
            {"BrandName": "Uno", "ATM": [atm("A2")]}
        ]));
        let atms = read(text.as_bytes()).unwrap().feed.atms;
        let names: Vec<(&str, &str)> = atms.iter().map(|a| (a.brand.as_str(), a.identification.as_str())).collect();
        assert_eq!(names, [("Uno", "A1"), ("Dos", "B1"), ("Uno", "A2")]);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&atms[2].record).unwrap(), atm("A2"));
    }

    #[test]
    fn every_demo_atm_is_a_valid_obie_record_stored_as_an_import_stores_it() {
        for demo in domain::demo::atms().unwrap() {
            let record: crate::formats::obie::Atm = serde_json::from_str(&demo.record).unwrap();
            assert_eq!(record.stored(&demo.brand).unwrap(), demo, "{}", demo.identification);
        }
    }

    #[test]
    fn an_invalid_record_is_named_by_position_and_field() {
        let mut bad = atm("A2");
        bad["Location"]["PostalAddress"]["Country"] = serde_json::json!("Mexico");
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), bad]}]));
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(error.contains("data[0].Brand[0].ATM[1].Location.PostalAddress.Country"), "{error}");
        assert!(error.contains("Mexico"), "{error}");
    }

    #[test]
    fn a_repeated_identification_within_a_brand_is_refused() {
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), atm("A1")]}]));
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(error.contains("data[0].Brand[0].ATM[1]") && error.contains("ATM[0]"), "{error}");
    }

    #[test]
    fn a_control_character_is_refused_naming_the_record_and_the_field() {
        let bad = atm("A2\u{0}");
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), bad]}]));
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(
            error.starts_with("at data[0].Brand[0].ATM[1].Identification: character 3 is the control character U+0000"),
            "{error}"
        );
        let text = file(serde_json::json!([{"BrandName": "Uno\u{1b}[2J", "ATM": [atm("A1")]}]));
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(
            error.starts_with("at data[0].Brand[0].BrandName: character 4 is the control character U+001B"),
            "{error}"
        );
    }

    #[test]
    fn a_record_over_the_bound_is_refused_naming_it_and_one_within_it_is_stored() {
        // The probe's record: 20,000 notes of 2,000 characters, 40 MB on every page.
        let mut huge = atm("A2");
        huge["Note"] = serde_json::json!(vec!["n".repeat(2_000); 20_000]);
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), huge]}]));
        let error = read(text.as_bytes()).unwrap_err().to_string();
        assert!(
            error.starts_with("at data[0].Brand[0].ATM[1] (Identification \"A2\"): the record takes 40"),
            "{error}"
        );
        assert!(error.ends_with("over the 16384 bytes an ATM may take"), "{error}");
        // Seven notes of 2,000 characters fit, with the rest of a record.
        let mut full = atm("A3");
        full["Note"] = serde_json::json!(vec!["n".repeat(2_000); 7]);
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [full]}]));
        assert!(read(text.as_bytes()).unwrap().feed.atms[0].record.len() > 14_000);
    }

    /// The bound's measurement: the records of a real bank's feed (HSBC UK's, 780 ATMs)
    /// as an import stores them.
    #[test]
    fn the_largest_record_of_a_real_feed_is_under_a_twentieth_of_the_bound() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/tests/data/hsbc-uk-v2.2-2024-01-21.json");
        let atms = read(std::fs::File::open(path).unwrap()).unwrap().feed.atms;
        let mut sizes: Vec<usize> = atms.iter().map(|atm| atm.record.len()).collect();
        sizes.sort_unstable();
        let (smallest, largest, median) = (sizes[0], sizes[sizes.len() - 1], sizes[sizes.len() / 2]);
        println!("figure: {} records, {smallest} to {largest} bytes, median {median}", sizes.len());
        assert!(largest * 20 < MAX_RECORD_BYTES, "{largest}");
    }

    #[test]
    fn a_long_bad_value_is_quoted_by_its_first_characters_wherever_the_parser_quotes_it() {
        let long = format!("{}\u{1b}[2J", "x".repeat(1_000_000));
        let mut variant = atm("A1");
        variant["ATMServices"] = serde_json::json!([long]);
        let mut field = atm("A1");
        field[long.as_str()] = serde_json::json!(1);
        let mut kind = atm("A1");
        kind["Access24HoursIndicator"] = serde_json::json!(long);
        for record in [variant, field, kind] {
            let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [record]}]));
            let error = read(text.as_bytes()).unwrap_err().to_string();
            assert!(error.len() < 1_000 && error.contains("… (100000"), "{}", &error[..200.min(error.len())]);
            assert!(!error.contains('\u{1b}'), "{error}");
        }
    }

    #[test]
    fn a_brand_without_atms_is_refused() {
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": []}]));
        assert!(read(text.as_bytes()).unwrap_err().to_string().contains("data[0].Brand[0].ATM"));
    }
}
