//! fio's command line: `--name=a --rw=randread --bs=4k --name=b ...`.
//!
//! As in fio (init.c `parse_cmd_line`), each `--name` starts a new job, options before the
//! first `--name` (or after `--name=global`) are global and apply to the jobs after them, and
//! order matters. The same option table and builder as job files are used, so a command line
//! and the equivalent job file give the same [`JobSet`].
//!
//! blksim also lets options follow a job file (`blksim run job.fio --runtime=1`); those are
//! overrides applied to every job after the file is parsed ([`apply_overrides`]), so they win
//! over the file. (fio itself would treat them as defaults the file can override.)
//!
//! Errors use the file name [`COMMAND_LINE`] and the argument's index as the line.

use crate::error::{ParseError, COMMAND_LINE};
use crate::jobfile::{
    apply_opts, is_global_name, replace_keywords, Builder, Keywords, RawOpt, Section,
};
use crate::options::{finalize, find_option, unknown_option_message, OptType, Support};
use crate::spec::JobSet;

/// One fio option from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliOption {
    /// Index of the argument in the slice it came from (the "line" of errors).
    pub index: usize,
    /// The option name as typed, without dashes.
    pub key: String,
    /// None for a bare `--time_based`.
    pub value: Option<String>,
}

/// Split arguments into fio options and everything else (positionals, blksim's own options,
/// unknown options), keeping each argument's index. An argument is a fio option when it is
/// `--key[=value]` (or `-key[=value]`, as fio's `getopt_long_only` allows) and `key` is in the
/// option table. `--key value` (two arguments) is taken for options that need a value; for
/// booleans and flags a bare `--key` means 1, so write `--direct=0` to turn one off. After a
/// lone `--` everything is "other".
pub fn split_cli_options(args: &[String]) -> (Vec<CliOption>, Vec<(usize, String)>) {
    let mut fio = Vec::new();
    let mut other = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            other.extend(
                args[i..]
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(k, s)| (i + k, s)),
            );
            break;
        }
        let body = a.strip_prefix("--").or_else(|| a.strip_prefix('-'));
        let parsed = body.filter(|b| !b.is_empty()).and_then(|b| {
            let (key, value) = match b.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (b, None),
            };
            find_option(key).map(|d| (d, key.to_string(), value))
        });
        match parsed {
            Some((d, key, mut value)) => {
                let idx = i;
                // fio's getopt takes the next argument as the value of any option but a
                // bool or a bare flag (`write_bw_log` too: `--write_bw_log foo`).
                let wants_value = (!d.kind.bare_ok() || d.kind == OptType::OptStr)
                    && d.support == Support::Modelled;
                if value.is_none() && wants_value && i + 1 < args.len() {
                    value = Some(args[i + 1].clone());
                    i += 1;
                }
                fio.push(CliOption {
                    index: idx,
                    key,
                    value,
                });
            }
            None => other.push((i, a.clone())),
        }
        i += 1;
    }
    (fio, other)
}

/// The error of an `--ioengine` blksim does not run, when `opts` name one: an unknown option
/// beside it is that engine's own (fio loads an engine's options with the engine), so the
/// engine is what to report.
pub fn unsupported_engine_error(opts: &[CliOption]) -> Option<ParseError> {
    let kw = Keywords::default();
    let raw: Vec<RawOpt> = opts.iter().map(|o| raw(o, &kw)).collect();
    crate::jobfile::unsupported_engine(&crate::spec::JobSpec::default(), &raw)
}

/// Parse a command line made only of fio options (`args[0]` is an option, not a program
/// name). Anything that isn't a known fio option is an error.
pub fn parse_cli(args: &[String]) -> Result<JobSet, ParseError> {
    let (fio, other) = split_cli_options(args);
    if let Some((idx, a)) = other.first() {
        return Err(not_an_option(*idx, a));
    }
    jobs_from_cli(&fio)
}

/// The error for an argument that isn't a fio option.
fn not_an_option(idx: usize, a: &str) -> ParseError {
    let body = a.strip_prefix("--").or_else(|| a.strip_prefix('-'));
    match body {
        Some(b) if !b.is_empty() => {
            let key = b.split_once('=').map_or(b, |(k, _)| k);
            ParseError::new(COMMAND_LINE, idx, None, unknown_option_message(key))
        }
        _ => ParseError::new(
            COMMAND_LINE,
            idx,
            None,
            format!("unexpected argument '{a}' (expected --option=value)"),
        ),
    }
}

fn raw(o: &CliOption, kw: &Keywords) -> RawOpt {
    RawOpt {
        key: o.key.clone(),
        value: o.value.as_deref().map(|v| replace_keywords(v, kw)),
        file: COMMAND_LINE.to_string(),
        line: o.index,
    }
}

/// Build jobs from fio options in command-line order.
pub fn jobs_from_cli(opts: &[CliOption]) -> Result<JobSet, ParseError> {
    let kw = Keywords::default();
    let mut sections: Vec<Section> = Vec::new();
    for o in opts {
        let d = find_option(&o.key).ok_or_else(|| {
            ParseError::new(COMMAND_LINE, o.index, None, unknown_option_message(&o.key))
        })?;
        if d.name == "name" {
            let name = o.value.as_deref().map(str::trim).unwrap_or("");
            if name.is_empty() {
                return Err(ParseError::new(
                    COMMAND_LINE,
                    o.index,
                    Some("name"),
                    "requires a value",
                ));
            }
            let is_global = is_global_name(name);
            sections.push(Section {
                name: name.to_string(),
                is_global,
                origin: COMMAND_LINE.to_string(),
                // fio lists `name` among a command-line job's options.
                opts: if is_global {
                    Vec::new()
                } else {
                    vec![raw(o, &kw)]
                },
                implicit_stonewall: false,
            });
            continue;
        }
        if sections.is_empty() {
            sections.push(Section {
                name: "global".into(),
                is_global: true,
                origin: COMMAND_LINE.to_string(),
                opts: Vec::new(),
                implicit_stonewall: false,
            });
        }
        if let Some(sec) = sections.last_mut() {
            sec.opts.push(raw(o, &kw));
        }
    }
    let mut b = Builder::new();
    for s in &sections {
        b.add(s)?;
    }
    b.finish(COMMAND_LINE)
}

/// Apply command-line options to every job of an already parsed set (blksim's
/// `blksim run job.fio --runtime=1`); they win over the file. Each job's `raw_options` gets the
/// option (replacing an earlier value of the same option). `--name` is refused: on fio's
/// command line it would start a new job.
pub fn apply_overrides(set: &mut JobSet, opts: &[CliOption]) -> Result<(), ParseError> {
    let kw = Keywords::default();
    let mut raws = Vec::with_capacity(opts.len());
    for o in opts {
        let d = find_option(&o.key).ok_or_else(|| {
            ParseError::new(COMMAND_LINE, o.index, None, unknown_option_message(&o.key))
        })?;
        if d.name == "name" {
            return Err(ParseError::new(
                COMMAND_LINE,
                o.index,
                Some("name"),
                "--name starts a new job; it can't be combined with a job file",
            ));
        }
        raws.push(raw(o, &kw));
    }
    for job in &mut set.jobs {
        let applied = apply_opts(job, &raws)?;
        for (k, v) in applied {
            match job.raw_options.iter_mut().find(|(ek, _)| *ek == k) {
                Some(slot) => slot.1 = v,
                None => job.raw_options.push((k, v)),
            }
        }
        finalize(job);
        crate::options::check_engine_options(job)?;
        crate::options::check_rate_options(job)?;
    }
    Ok(())
}

/// [`apply_overrides`] for `(key, value)` pairs; an empty value is a bare key. Error "lines"
/// are the pair's 1-based position.
pub fn apply_override_pairs(
    set: &mut JobSet,
    pairs: &[(String, String)],
) -> Result<(), ParseError> {
    let opts: Vec<CliOption> = pairs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| CliOption {
            index: i + 1,
            key: k.clone(),
            value: if v.is_empty() { None } else { Some(v.clone()) },
        })
        .collect();
    apply_overrides(set, &opts)
}
