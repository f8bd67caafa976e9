//! Numeric CSV: an optional header line, then rows of finite numbers, all of the
//! same width.

use tensor::{Error, Result, Tensor};

/// A parsed CSV table.
#[derive(Clone, Debug)]
pub struct CsvTable {
    /// Column names (empty when the file has no header).
    pub header: Vec<String>,
    /// The values, `[rows, columns]`.
    pub values: Tensor<f64>,
}

/// Parses CSV text. `what` names the source in errors.
pub fn parse_csv(text: &str, has_header: bool, what: &str) -> Result<CsvTable> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty());
    let header: Vec<String> = if has_header {
        let (_, h) = lines
            .next()
            .ok_or_else(|| Error::format(what, "the file is empty: no header line"))?;
        h.split(',').map(|s| s.trim().to_string()).collect()
    } else {
        Vec::new()
    };
    let mut width = if has_header { Some(header.len()) } else { None };
    let mut data = Vec::new();
    let mut rows = 0usize;
    for (lineno, line) in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let w = *width.get_or_insert(fields.len());
        if fields.len() != w {
            return Err(Error::format(
                what,
                format!("line {lineno} has {} fields, expected {w}", fields.len()),
            ));
        }
        for (col, f) in fields.iter().enumerate() {
            let v: f64 = f.trim().parse().map_err(|_| {
                Error::format(
                    what,
                    format!(
                        "line {lineno}, column {}: '{}' is not a number",
                        col + 1,
                        f.trim()
                    ),
                )
            })?;
            if !v.is_finite() {
                return Err(Error::format(
                    what,
                    format!(
                        "line {lineno}, column {}: '{}' is not finite",
                        col + 1,
                        f.trim()
                    ),
                ));
            }
            data.push(v);
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(Error::format(what, "no data rows"));
    }
    let cols = width.unwrap_or(0);
    Ok(CsvTable {
        header,
        values: Tensor::from_vec(data, &[rows, cols])?,
    })
}

/// Reads and parses a CSV file.
pub fn load_csv(path: &std::path::Path, has_header: bool) -> Result<CsvTable> {
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::io(&what, &e))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| Error::format(&what, format!("not valid UTF-8: {e}")))?;
    parse_csv(text, has_header, &what)
}
