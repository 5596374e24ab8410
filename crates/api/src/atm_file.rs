//! Reading an OBIE ATM 2.3 file (`{"meta":…,"data":[{"Brand":[{"BrandName":…,"ATM":[…]}]}]}`,
//! as the UK banks publish it) into validated records in the domain's stored form.

use std::collections::HashMap;
use std::io::Read;

use domain::atm_catalog::StoredAtm;
use serde::Deserialize;

use crate::obie::{Brand, List, UNBOUNDED};

/// The file's envelope. `meta` is the publisher's and is not kept: the service sets its
/// own LastUpdated at import.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtmFile {
    #[serde(default, rename = "meta")]
    _meta: Option<serde::de::IgnoredAny>,
    data: Vec<DataItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataItem {
    #[serde(rename = "Brand")]
    brand: List<Brand, 1, UNBOUNDED>,
}

/// Why a file was refused: the position of the record and the field, then the reason.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AtmFileError(String);

/// Parses and validates a whole ATM file, each record then written in stored form
/// once. A brand may be named more than once; an ATM identification repeated within a
/// brand is refused.
///
/// # Errors
/// [`AtmFileError`] naming the first invalid record by its path in the file
/// (`data[0].Brand[1].ATM[17]`) and the field within it.
pub fn parse(input: impl Read) -> Result<Vec<StoredAtm>, AtmFileError> {
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(input));
    let file: AtmFile = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." { String::new() } else { format!("at {path}: ") };
        AtmFileError(format!("{at}{}", error.inner()))
    })?;
    json.end().map_err(|e| AtmFileError(e.to_string()))?;

    let mut atms = Vec::new();
    let mut seen: HashMap<(&str, &str), String> = HashMap::new();
    for (d, item) in file.data.iter().enumerate() {
        for (b, brand) in item.brand.items().iter().enumerate() {
            let name = brand.name.as_str();
            for (a, atm) in brand.atms.items().iter().enumerate() {
                let here = format!("data[{d}].Brand[{b}].ATM[{a}]");
                if let Some(first) = seen.insert((name, atm.identification.as_str()), here.clone()) {
                    return Err(AtmFileError(format!(
                        "at {here}.Identification: {:?} of brand {name:?} was already given at {first}",
                        atm.identification.as_str()
                    )));
                }
                atms.push(atm.stored(name).map_err(|e| AtmFileError(format!("at {here}: {e}")))?);
            }
        }
    }
    Ok(atms)
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
        let atms = parse(text.as_bytes()).unwrap();
        let names: Vec<(&str, &str)> = atms.iter().map(|a| (a.brand.as_str(), a.identification.as_str())).collect();
        assert_eq!(names, [("Uno", "A1"), ("Dos", "B1"), ("Uno", "A2")]);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&atms[2].record).unwrap(), atm("A2"));
    }

    #[test]
    fn every_demo_atm_is_a_valid_obie_record_stored_as_an_import_stores_it() {
        for demo in domain::demo::atms().unwrap() {
            let record: crate::obie::Atm = serde_json::from_str(&demo.record).unwrap();
            assert_eq!(record.stored(&demo.brand).unwrap(), demo, "{}", demo.identification);
        }
    }

    #[test]
    fn an_invalid_record_is_named_by_position_and_field() {
        let mut bad = atm("A2");
        bad["Location"]["PostalAddress"]["Country"] = serde_json::json!("Mexico");
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), bad]}]));
        let error = parse(text.as_bytes()).unwrap_err().to_string();
        assert!(error.contains("data[0].Brand[0].ATM[1].Location.PostalAddress.Country"), "{error}");
        assert!(error.contains("Mexico"), "{error}");
    }

    #[test]
    fn a_repeated_identification_within_a_brand_is_refused() {
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": [atm("A1"), atm("A1")]}]));
        let error = parse(text.as_bytes()).unwrap_err().to_string();
        assert!(error.contains("data[0].Brand[0].ATM[1]") && error.contains("ATM[0]"), "{error}");
    }

    #[test]
    fn a_brand_without_atms_is_refused() {
        let text = file(serde_json::json!([{"BrandName": "Uno", "ATM": []}]));
        assert!(parse(text.as_bytes()).unwrap_err().to_string().contains("data[0].Brand[0].ATM"));
    }
}
