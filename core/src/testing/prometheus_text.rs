//! Reading the Prometheus text format in tests.

use std::collections::BTreeMap;

/// Samples by `name{label="value",…}` (labels sorted by name).
pub type Samples = BTreeMap<String, f64>;

/// Parses the Prometheus text exposition format (0.0.4) strictly enough
/// to catch a malformed endpoint: every sample belongs to a family
/// declared by `# TYPE` (histograms through their `_bucket`, `_sum` and
/// `_count` series), labels are quoted, values are numbers, no series
/// appears twice.
pub fn parse(text: &str) -> Result<Samples, String> {
    let mut families: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Samples::new();
    for (n, line) in text.lines().enumerate() {
        let fail = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() || line.starts_with("# HELP ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').ok_or_else(|| fail("bad TYPE"))?;
            if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                return Err(fail("unknown type"));
            }
            families.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with('#') {
            return Err(fail("unknown comment"));
        }
        let (series, value) = line.rsplit_once(' ').ok_or_else(|| fail("no value"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| fail("value is not a number"))?,
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (
                name,
                labels(
                    rest.strip_suffix('}')
                        .ok_or_else(|| fail("unclosed labels"))?,
                )
                .map_err(|e| fail(&e))?,
            ),
            None => (series, Vec::new()),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            return Err(fail("bad metric name"));
        }
        let declared = families.contains_key(name)
            || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
                name.strip_suffix(suffix)
                    .and_then(|base| families.get(base))
                    .is_some_and(|kind| kind == "histogram" || kind == "summary")
            });
        if !declared {
            return Err(fail("sample without a # TYPE"));
        }
        if samples.insert(key(name, &labels), value).is_some() {
            return Err(fail("series repeated"));
        }
    }
    Ok(samples)
}

fn labels(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").ok_or("label without =\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("dangling escape".into()),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        out.push((name.to_owned(), value));
        rest = after[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&after[end + 1..]);
    }
    Ok(out)
}

fn key(name: &str, labels: &[(String, String)]) -> String {
    let mut labels = labels.to_vec();
    labels.sort();
    if labels.is_empty() {
        return name.to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// The value of one series; 0 when absent (a counter not yet moved).
pub fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    samples.get(&key(name, &labels)).copied().unwrap_or(0.0)
}
