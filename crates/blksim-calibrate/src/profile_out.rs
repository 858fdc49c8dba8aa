//! Writing a calibrated profile: the base profile's own TOML text with each fitted value
//! written in place (or added to its table), annotated with where it came from, so the file
//! keeps the base's comments and structure and says what was fitted.

/// The table and field of a profile key: `card.t_prog_ns` → (`card`, `t_prog_ns`),
/// `queue.iosched.fifo_batch` → (`queue.iosched`, `fifo_batch`), `completion_nsec` →
/// (`device`, `completion_nsec`).
fn table_of(key: &str) -> (String, &str) {
    match key.rsplit_once('.') {
        Some((t, f)) => (t.to_string(), f),
        None => ("device".to_string(), key),
    }
}

fn toml_value(v: &str) -> String {
    let numeric = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && v.len() < 19;
    if numeric || v == "true" || v == "false" {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

/// `text` with `key` set to `value`, the line ending in `# comment`.
pub fn set_key(text: &str, key: &str, value: &str, comment: &str) -> String {
    let (table, field) = table_of(key);
    let line = format!("{field} = {}  # {comment}", toml_value(value));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut section = String::new();
    let mut header: Option<usize> = None;
    for (i, l) in lines.iter_mut().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            if section == table {
                header = Some(i);
            }
            continue;
        }
        if section == table {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim() == field && !t.starts_with('#') {
                    *l = line;
                    return lines.join("\n") + "\n";
                }
            }
        }
    }
    match header {
        Some(h) => lines.insert(h + 1, line),
        None => {
            if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                lines.push(String::new());
            }
            lines.push(format!("[{table}]"));
            lines.push(line);
        }
    }
    lines.join("\n") + "\n"
}

/// `text` with its top-level `name` replaced (the calibrated profile is a new device).
pub fn set_name(text: &str, name: &str) -> String {
    let mut done = false;
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        let t = l.trim_start();
        if !done && t.starts_with("name") && t[4..].trim_start().starts_with('=') {
            out.push(format!("name = {name:?}"));
            done = true;
        } else {
            if t.starts_with('[') && !done {
                out.push(format!("name = {name:?}"));
                done = true;
            }
            out.push(l.to_string());
        }
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_in_place_adds_to_the_table_or_adds_the_table() {
        let base = "name = \"x\"\ndriver = \"mmc\"\n\n[card]\nt_r_ns = 5  # old\n\n[host]\nqueue = \"legacy\"\n";
        let t = set_key(base, "card.t_r_ns", "70000", "calib: fitted");
        assert!(
            t.contains("[card]\nt_r_ns = 70000  # calib: fitted\n"),
            "{t}"
        );
        let t = set_key(&t, "card.t_prog_ns", "9", "calib: fitted");
        assert!(
            t.contains("[card]\nt_prog_ns = 9  # calib: fitted\nt_r_ns = 70000"),
            "{t}"
        );
        let t = set_key(&t, "platform.nr_cpus", "4", "c");
        assert!(t.ends_with("\n[platform]\nnr_cpus = 4  # c\n"), "{t}");
        let t = set_key(&t, "host.queue", "hsq", "c");
        assert!(t.contains("queue = \"hsq\"  # c"), "{t}");
        let t = set_name(&t, "mine");
        assert!(t.starts_with("name = \"mine\"\n"), "{t}");
        let p = blksim_sim::Profile::parse(&t, "t.toml").unwrap();
        assert_eq!(p.get("card.t_r_ns").as_deref(), Some("70000"));
        assert_eq!(p.get("card.t_prog_ns").as_deref(), Some("9"));
        assert_eq!(p.get("host.queue").as_deref(), Some("hsq"));
        assert_eq!(p.name, "mine");
    }
}
