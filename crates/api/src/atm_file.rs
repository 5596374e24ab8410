//! Reading an OBIE ATM 2.3 file (`{"meta":…,"data":[{"Brand":[{"BrandName":…,"ATM":[…]}]}]}`,
//! as the UK banks publish it) into validated brands.

use std::collections::HashMap;
use std::io::Read;

use domain::atm::{Brand, List, UNBOUNDED};
use serde::Deserialize;

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

/// Parses and validates a whole ATM file. Brands named twice are merged; an ATM
/// identification repeated within a brand is refused.
///
/// # Errors
/// [`AtmFileError`] naming the first invalid record by its path in the file
/// (`data[0].Brand[1].ATM[17]`) and the field within it.
pub fn parse(input: impl Read) -> Result<Vec<Brand>, AtmFileError> {
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(input));
    let file: AtmFile = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." { String::new() } else { format!("at {path}: ") };
        AtmFileError(format!("{at}{}", error.inner()))
    })?;
    json.end().map_err(|e| AtmFileError(e.to_string()))?;

    let mut merged: Vec<(String, Vec<domain::atm::Atm>)> = Vec::new();
    let mut brand_index: HashMap<String, usize> = HashMap::new();
    let mut seen: HashMap<(usize, String), String> = HashMap::new();
    for (d, item) in file.data.into_iter().enumerate() {
        for (b, brand) in Vec::from(item.brand).into_iter().enumerate() {
            let name = brand.name.as_str().to_owned();
            let index = *brand_index.entry(name.clone()).or_insert_with(|| {
                merged.push((name.clone(), Vec::new()));
                merged.len() - 1
            });
            for (a, atm) in Vec::from(brand.atms).into_iter().enumerate() {
                let here = format!("data[{d}].Brand[{b}].ATM[{a}]");
                let key = (index, atm.identification.as_str().to_owned());
                if let Some(first) = seen.insert(key, here.clone()) {
                    return Err(AtmFileError(format!(
                        "at {here}.Identification: {:?} of brand {name:?} was already given at {first}",
                        atm.identification.as_str()
                    )));
                }
                merged[index].1.push(atm);
            }
        }
    }
    merged
        .into_iter()
        .map(|(name, atms)| {
            Ok(Brand {
                name: name.try_into().map_err(|e| AtmFileError(format!("brand name: {e}")))?,
                atms: atms.try_into().map_err(|e| AtmFileError(format!("brand ATMs: {e}")))?,
            })
        })
        .collect()
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
    fn a_valid_file_gives_its_brands_and_merges_repeated_brand_names() {
        let text = file(serde_json::json!([
            {"BrandName": "Uno", "ATM": [atm("A1")]},
            {"BrandName": "Dos", "ATM": [atm("B1")]},
            {"BrandName": "Uno", "ATM": [atm("A2")]}
        ]));
        let brands = parse(text.as_bytes()).unwrap();
        assert_eq!(brands.len(), 2);
        assert_eq!(brands[0].atms.items().len(), 2);
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
