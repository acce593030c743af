//! Query strings: parsing (form encoding, validated lengths) and building the links
//! that hold a page's filters and selection, so a URL can be shared.

use crate::error::ViewError;

/// Longest value of one query parameter; longer is a bad request.
pub const MAX_VALUE_CHARS: usize = 4096;
/// Most parameters in one query string.
const MAX_PARAMS: usize = 64;

/// The parameters of a query string, in order.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses the part of `url` after `?` (form encoding: `+` is a space, `%XX` bytes).
    pub fn parse(url: &str) -> Result<(String, Query), ViewError> {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let mut pairs = Vec::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            if pairs.len() >= MAX_PARAMS {
                return Err(ViewError::BadRequest(format!("more than {MAX_PARAMS} query parameters")));
            }
            if v.chars().count() > MAX_VALUE_CHARS || k.len() > 64 {
                return Err(ViewError::BadRequest(format!("query parameter {k:?} is too long")));
            }
            pairs.push((k.into_owned(), v.into_owned()));
        }
        let path = form_urlencoded::parse(path.as_bytes()).next().map(|(k, _)| k.into_owned()).unwrap_or_default();
        Ok((path, Query { pairs }))
    }

    /// The first non-empty value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, v)| k == key && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// The value of `key` as a number, or a bad request.
    pub fn number(&self, key: &str, max: u64) -> Result<Option<u64>, ViewError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(Some(n)),
                _ => Err(ViewError::BadRequest(format!("{key} must be a number from 0 to {max}, not {v:?}"))),
            },
        }
    }
}

/// `path?k=v&...` with the pairs form-encoded (empty values left out).
pub fn link(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        ser.append_pair(k, v);
    }
    let q = ser.finish();
    if q.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{q}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_builds_round_trip() {
        let (path, q) = Query::parse("/list?source=a+b&model=%3Cx%3E&page=2&x=").expect("parse");
        assert_eq!(path, "/list");
        assert_eq!(q.get("source"), Some("a b"));
        assert_eq!(q.get("model"), Some("<x>"));
        assert_eq!(q.number("page", 10).expect("number"), Some(2));
        assert_eq!(q.get("x"), None);
        assert!(q.number("source", 10).is_err());
        assert_eq!(
            link("/list", &[("source", "a b"), ("model", "<x>&"), ("gap", "")]),
            "/list?source=a+b&model=%3Cx%3E%26"
        );
    }

    #[test]
    fn refuses_overlong_values() {
        let long = "x".repeat(MAX_VALUE_CHARS + 1);
        assert!(matches!(Query::parse(&format!("/search?q={long}")), Err(ViewError::BadRequest(_))));
    }
}
