//! Where a sweep's rows go: a CSV journal appended point by point as points finish (what a
//! resumed sweep reads back), and at the end the rows in point order as Parquet (and, if
//! asked, CSV).
//!
//! Each point's rows are appended in one write and carry the point's row count, so a sweep
//! killed in the middle of a write leaves a point that reads as unfinished and runs again.

use crate::run::{Row, FIGURES};
use crate::spec::Spec;
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The columns, in order.
pub fn columns(spec: &Spec) -> Vec<String> {
    let mut c = vec!["point".to_string(), "seed".to_string()];
    c.extend(spec.axes.iter().map(|a| a.key.clone()));
    c.push("job".into());
    c.push("ddir".into());
    c.extend(FIGURES.iter().map(|s| s.to_string()));
    c
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!("{x}")
    }
}

/// CSV lines of `rows`; the journal adds the point's row count as a last column.
pub fn csv_lines(rows: &[Row], with_count: bool) -> String {
    let mut s = String::new();
    for r in rows {
        let mut f = vec![r.point.to_string(), r.seed.to_string()];
        f.extend(r.axes.iter().map(|a| quote(a)));
        f.push(quote(&r.job));
        f.push(quote(&r.ddir));
        f.extend(r.figures.iter().map(|&x| num(x)));
        if with_count {
            f.push(rows.len().to_string());
        }
        s.push_str(&f.join(","));
        s.push('\n');
    }
    s
}

pub fn header(spec: &Spec, with_count: bool) -> String {
    let mut c: Vec<String> = columns(spec).iter().map(|c| quote(c)).collect();
    if with_count {
        c.push("rows_of_point".into());
    }
    c.join(",") + "\n"
}

/// Split one CSV line (quotes as [`quote`] writes them).
fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, q) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => q = !q,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The finished points of a journal: point index → its rows' CSV lines (without the count).
/// A journal with another header belongs to another sweep: an error.
pub fn read_journal(path: &Path, spec: &Spec) -> Result<BTreeMap<u64, (String, Vec<Row>)>, String> {
    let shown = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        None => return Ok(BTreeMap::new()),
        Some(h) if h == header(spec, true) => {}
        Some(_) => {
            return Err(format!(
                "{shown}: a journal of another sweep (its columns differ); remove it or give another --out"
            ))
        }
    }
    let n_axes = spec.axes.len();
    let width = columns(spec).len() + 1;
    let mut by_point: BTreeMap<u64, Vec<Row>> = BTreeMap::new();
    let mut want: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, l) in lines.enumerate() {
        if !l.ends_with('\n') {
            break; // torn last write
        }
        let f = split(l.trim_end_matches(['\n', '\r']));
        let bad = || format!("{shown}:{}: not a row of this sweep", i + 2);
        if f.len() != width {
            return Err(bad());
        }
        let point: u64 = f[0].parse().map_err(|_| bad())?;
        let seed: u64 = f[1].parse().map_err(|_| bad())?;
        let mut figures = [f64::NAN; 10];
        for (k, x) in figures.iter_mut().enumerate() {
            let t = &f[4 + n_axes + k];
            if !t.is_empty() {
                *x = t.parse().map_err(|_| bad())?;
            }
        }
        let count: usize = f[width - 1].parse().map_err(|_| bad())?;
        want.insert(point, count);
        by_point.entry(point).or_default().push(Row {
            point,
            seed,
            axes: f[2..2 + n_axes].to_vec(),
            job: f[2 + n_axes].clone(),
            ddir: f[3 + n_axes].clone(),
            figures,
        });
    }
    Ok(by_point
        .into_iter()
        .filter(|(p, rows)| want.get(p) == Some(&rows.len()))
        .map(|(p, rows)| {
            let key = rows.first().map(|r| key_of(spec, r)).unwrap_or_default();
            (p, (key, rows))
        })
        .collect())
}

/// The point key ([`crate::grid::Point::key`]) a row was written for.
pub fn key_of(spec: &Spec, r: &Row) -> String {
    let mut k: Vec<String> = spec
        .axes
        .iter()
        .zip(&r.axes)
        .map(|(a, v)| format!("{}={v}", a.key))
        .collect();
    k.push(format!("seed={}", r.seed));
    k.join(";")
}

enum Col {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(Vec<ByteArray>),
}

/// An axis column's type: whole numbers, numbers, or text.
fn axis_col(values: &[&str]) -> Col {
    if values.iter().all(|v| v.parse::<i64>().is_ok()) {
        Col::Int(values.iter().map(|v| v.parse().unwrap_or(0)).collect())
    } else if values.iter().all(|v| v.parse::<f64>().is_ok()) {
        Col::Float(
            values
                .iter()
                .map(|v| v.parse().unwrap_or(f64::NAN))
                .collect(),
        )
    } else {
        Col::Text(values.iter().map(|v| ByteArray::from(*v)).collect())
    }
}

/// Rows (in point order) as a Parquet file: one row group, typed columns (axes as whole
/// numbers, numbers or text, as their values allow).
pub fn write_parquet(path: &Path, spec: &Spec, rows: &[Row]) -> Result<(), String> {
    let shown = path.display();
    let err = |e: parquet::errors::ParquetError| format!("{shown}: {e}");
    let mut cols: Vec<(String, Col)> = Vec::new();
    cols.push((
        "point".into(),
        Col::Int(rows.iter().map(|r| r.point as i64).collect()),
    ));
    cols.push((
        "seed".into(),
        Col::Int(rows.iter().map(|r| r.seed as i64).collect()),
    ));
    for (i, a) in spec.axes.iter().enumerate() {
        let v: Vec<&str> = rows.iter().map(|r| r.axes[i].as_str()).collect();
        cols.push((a.key.clone(), axis_col(&v)));
    }
    cols.push((
        "job".into(),
        Col::Text(
            rows.iter()
                .map(|r| ByteArray::from(r.job.as_str()))
                .collect(),
        ),
    ));
    cols.push((
        "ddir".into(),
        Col::Text(
            rows.iter()
                .map(|r| ByteArray::from(r.ddir.as_str()))
                .collect(),
        ),
    ));
    for (k, name) in FIGURES.iter().enumerate() {
        let v = rows.iter().map(|r| r.figures[k]);
        let c = if matches!(*name, "total_ios" | "runtime_ms") {
            Col::Int(v.map(|x| if x.is_nan() { 0 } else { x as i64 }).collect())
        } else {
            Col::Float(v.collect())
        };
        cols.push((name.to_string(), c));
    }
    let fields = cols
        .iter()
        .map(|(name, c)| {
            let b = match c {
                Col::Int(_) => Type::primitive_type_builder(name, Physical::INT64),
                Col::Float(_) => Type::primitive_type_builder(name, Physical::DOUBLE),
                Col::Text(_) => Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
            };
            b.with_repetition(Repetition::REQUIRED)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let schema = Arc::new(
        Type::group_type_builder("blksim_sweep")
            .with_fields(fields)
            .build()
            .map_err(err)?,
    );
    let tmp = path.with_extension("parquet.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut w =
        SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::builder().build()))
            .map_err(err)?;
    let mut rg = w.next_row_group().map_err(err)?;
    let mut it = cols.iter();
    while let Some(mut cw) = rg.next_column().map_err(err)? {
        let (_, c) = it.next().ok_or_else(|| format!("{shown}: column count"))?;
        match c {
            Col::Int(v) => cw.typed::<Int64Type>().write_batch(v, None, None),
            Col::Float(v) => cw.typed::<DoubleType>().write_batch(v, None, None),
            Col::Text(v) => cw.typed::<ByteArrayType>().write_batch(v, None, None),
        }
        .map_err(err)?;
        cw.close().map_err(err)?;
    }
    rg.close().map_err(err)?;
    w.close().map_err(err)?;
    // Complete files only: a reader never sees a half-written Parquet.
    std::fs::rename(&tmp, path).map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_round_trip_through_quotes() {
        let s = "a,\"b,c\",\"say \"\"hi\"\"\",";
        assert_eq!(split(s), ["a", "b,c", "say \"hi\"", ""]);
        assert_eq!(quote("b,c"), "\"b,c\"");
        assert_eq!(split(&quote("say \"hi\"")), ["say \"hi\""]);
    }
}
