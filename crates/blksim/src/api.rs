//! blksim as a library: one entry point that takes fio jobs, a device profile and options and
//! returns fio's report, with errors that say where they come from. It reads no environment
//! and prints nothing; the binary and the Python package are its callers.
//!
//! ```no_run
//! let req = blksim::api::Request {
//!     job: blksim::api::Job::Text {
//!         text: "[a]\nrw=randread\nsize=16m\nruntime=10ms\n".into(),
//!         name: "a.fio".into(),
//!     },
//!     device: "null_blk".into(),
//!     ..Default::default()
//! };
//! let report = blksim::api::run(&req).unwrap();
//! println!("{}", blksim::api::json(&report, false));
//! ```

use blksim_core::output::OutputFiles;
use blksim_report::RunReport;
use blksim_sim::setup::{self, RunOptions, WallClock};
use blksim_sim::{Profile, RunError};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use blksim_core::output::{Disk, Memory};

/// Where a run's files go (fio's logs, `write_iolog`, blktrace): [`Disk`], [`Memory`], or any
/// [`OutputFiles`].
#[derive(Clone)]
pub struct Files(pub Arc<dyn OutputFiles>);

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Files(..)")
    }
}

/// Events one run may take unless the caller gives another bound: no input can make a call
/// run without end (a second of a 5 M I/O/s null_blk is about 2·10⁷ events).
pub const DEFAULT_MAX_EVENTS: u64 = 10_000_000_000;

/// The fio jobs of a run.
#[derive(Clone, Debug)]
pub enum Job {
    /// Job-file text; `name` stands for its file in messages and for `include`.
    Text { text: String, name: String },
    /// Job files, run as fio runs several (an implicit stonewall between files).
    Files(Vec<PathBuf>),
    /// fio's command line (`--name=a --rw=randread ...`).
    Cli(Vec<String>),
}

impl Default for Job {
    fn default() -> Self {
        Job::Cli(Vec::new())
    }
}

#[derive(Clone, Debug)]
pub struct Request {
    pub job: Job,
    /// A bundled profile's name or a TOML file.
    pub device: String,
    /// `--set` values, `KEY=VALUE`, applied in order.
    pub sets: Vec<String>,
    /// fio options over every job (`--runtime=1`), as on `blksim run`'s command line.
    pub options: Vec<String>,
    /// What `${VAR}` in job files expands to (nothing else is read from the environment).
    pub env: BTreeMap<String, String>,
    pub seed: u64,
    /// Bound on simulated events (default [`DEFAULT_MAX_EVENTS`]).
    pub max_events: Option<u64>,
    /// Keep the N slowest I/Os' paths (`--explain=N`; 0 = off).
    pub explain: usize,
    /// Wall-clock seconds stamped into the report (fio's `timestamp`, `time`); 0 = the epoch,
    /// so a library run is reproducible byte for byte.
    pub wall_clock_secs: u64,
    /// Write blktrace files (`<dir>/<dev>.blktrace.<cpu>`) into this folder of `files`.
    pub blktrace: Option<PathBuf>,
    /// Where the run's files go; default the file system ([`Disk`]), as the job options name
    /// them.
    pub files: Option<Files>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            job: Job::default(),
            device: blksim_sim::DEFAULT_DEVICE.to_string(),
            sets: Vec::new(),
            options: Vec::new(),
            env: BTreeMap::new(),
            seed: setup::DEFAULT_SEED,
            max_events: None,
            explain: 0,
            wall_clock_secs: 0,
            blktrace: None,
            files: None,
        }
    }
}

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// A job file or fio option: the file (or `<command line>`), its line (or the argument's
    /// position), and the option when one was rejected.
    Job {
        file: String,
        line: usize,
        option: Option<String>,
        message: String,
    },
    /// The device: no such profile, or a profile that does not parse or build.
    Device { device: String, message: String },
    /// A `--set` value.
    Set { key: String, message: String },
    /// The simulation itself (a runaway bound, an injected fault that stopped it).
    Run { message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Error::Job {
                file,
                line,
                option,
                message,
            } => {
                // As blksim_job::ParseError prints itself.
                f.write_str(file)?;
                if *line > 0 {
                    write!(f, ":{line}")?;
                }
                f.write_str(": ")?;
                if let Some(o) = option {
                    write!(f, "option '{o}': ")?;
                }
                f.write_str(message)
            }
            // Profile messages name their origin (`--set=KEY=VALUE:` or `file:line:`).
            Error::Device { message, .. } | Error::Set { message, .. } | Error::Run { message } => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<blksim_job::ParseError> for Error {
    fn from(e: blksim_job::ParseError) -> Self {
        Error::Job {
            file: e.file.clone(),
            line: e.line,
            option: e.option.clone(),
            message: e.message.clone(),
        }
    }
}

/// The fio job set a request describes.
pub fn jobs(req: &Request) -> Result<blksim_job::JobSet, Error> {
    let env = |k: &str| req.env.get(k).cloned();
    let mut set = match &req.job {
        Job::Text { text, name } => blksim_job::jobfile::parse_job_str(text, name, &env)?,
        Job::Files(paths) => blksim_job::jobfile::parse_job_files_with(
            paths,
            &env,
            &blksim_job::jobfile::Keywords::default(),
        )?,
        Job::Cli(args) => blksim_job::cli::parse_cli(args)?,
    };
    if !req.options.is_empty() {
        let (opts, other) = blksim_job::cli::split_cli_options(&req.options);
        if let Some((i, a)) = other.first() {
            return Err(Error::Job {
                file: blksim_job::COMMAND_LINE.to_string(),
                line: *i,
                option: None,
                message: format!("'{a}' is not a fio option"),
            });
        }
        blksim_job::cli::apply_overrides(&mut set, &opts)?;
    }
    setup::prepare_replay(&mut set)?;
    Ok(set)
}

/// The device profile a request describes, with its `--set` values.
pub fn profile(req: &Request) -> Result<Profile, Error> {
    let mut p = Profile::load(&req.device).map_err(|message| Error::Device {
        device: req.device.clone(),
        message,
    })?;
    for s in &req.sets {
        p.set(s).map_err(|message| Error::Set {
            key: s.split('=').next().unwrap_or("").trim().to_string(),
            message,
        })?;
    }
    Ok(p)
}

/// Run a request: fio's report (every output format writes from it).
pub fn run(req: &Request) -> Result<RunReport, Error> {
    let jobs = jobs(req)?;
    let profile = profile(req)?;
    let opts = RunOptions {
        seed: req.seed,
        max_events: Some(req.max_events.unwrap_or(DEFAULT_MAX_EVENTS)),
        explain: req.explain,
        blktrace: req.blktrace.clone(),
        files: req
            .files
            .as_ref()
            .map_or_else(|| Arc::new(Disk) as Arc<dyn OutputFiles>, |f| f.0.clone()),
        ..Default::default()
    };
    let out = setup::run(&jobs, &profile, &opts).map_err(|e| match e {
        RunError::Job(e) => e.into(),
        // Building the device from the profile happens inside the run: a message naming a
        // `--set=` origin is that value's.
        RunError::Profile(message) => match req
            .sets
            .iter()
            .find(|s| message.contains(&format!("--set={s}")))
        {
            Some(s) => Error::Set {
                key: s.split('=').next().unwrap_or("").trim().to_string(),
                message,
            },
            None => Error::Device {
                device: req.device.clone(),
                message,
            },
        },
        RunError::Run(message) => Error::Run { message },
    })?;
    // A job fio fails at setup makes fio exit with an error, though the others ran: a caller
    // without a terminal to print fio's lines to gets the error instead of a report in which
    // that job silently did nothing.
    if let Some(m) = out
        .tasks
        .iter()
        .find(|t| t.setup_failed)
        .and_then(|t| t.setup_failure.clone())
    {
        return Err(Error::Run { message: m });
    }
    let mut report = setup::build_report(
        &jobs,
        &profile,
        &opts,
        &out,
        &wall_clock(req.wall_clock_secs),
    );
    if req.explain > 0 {
        if let Some(b) = report.blksim.as_mut() {
            b.push("explain", crate::explain::json(&out));
        }
    }
    Ok(report)
}

/// fio's JSON output (`json+` with `plus`).
pub fn json(r: &RunReport, plus: bool) -> String {
    let mut buf = Vec::new();
    blksim_report::json::write_json(r, plus, &mut buf).expect("writing to a Vec");
    String::from_utf8(buf).expect("JSON is UTF-8")
}

/// fio's normal output.
pub fn normal(r: &RunReport) -> String {
    let mut buf = Vec::new();
    blksim_report::normal::write_normal_header(r, &mut buf).expect("writing to a Vec");
    blksim_report::normal::write_normal_results(r, &mut buf).expect("writing to a Vec");
    String::from_utf8_lossy(&buf).into_owned()
}

/// Sweep points simulated through [`run`] (for `blksim sweep`, the Python package and Ray
/// workers): a point's errors are this module's, printed with their location.
pub struct SweepRunner;

impl blksim_sweep::run::Runner for SweepRunner {
    fn run(&self, p: &blksim_sweep::run::PointRun) -> Result<String, String> {
        let req = Request {
            job: Job::Text {
                text: p.job_text.to_string(),
                name: p.job_name.to_string(),
            },
            device: p.device.clone(),
            sets: p.sets.clone(),
            options: p.options.clone(),
            seed: p.seed,
            ..Default::default()
        };
        run(&req)
            .map(|r| json(&r, false))
            .map_err(|e| e.to_string())
    }
}

/// The bundled device profiles: (name, description).
pub fn devices() -> Vec<(String, String)> {
    blksim_sim::BUNDLED
        .iter()
        .map(|b| {
            let d = Profile::parse(b.toml, b.name)
                .map(|p| p.description)
                .unwrap_or_default();
            (b.name.to_string(), d)
        })
        .collect()
}

/// One model parameter as `blksim params` lists it.
#[derive(Clone, Debug)]
pub struct Param {
    /// The key as profiles and `--set` name it.
    pub key: String,
    pub table: &'static str,
    pub unit: &'static str,
    pub default: &'static str,
    pub min: u64,
    pub max: u64,
    pub doc: &'static str,
    pub source: &'static str,
}

pub fn params() -> Vec<Param> {
    blksim_sim::params::PARAM_TABLES
        .iter()
        .flat_map(|t| {
            t.defs.iter().map(move |d| Param {
                key: format!("{}{}", t.prefix, d.key),
                table: t.title,
                unit: d.unit,
                default: d.default,
                min: d.min,
                max: d.max,
                doc: d.doc,
                source: d.source,
            })
        })
        .collect()
}

/// Wall-clock stamps for a report at `secs` after the epoch (UTC).
pub fn wall_clock(secs: u64) -> WallClock {
    wall_clock_ms(secs.saturating_mul(1000))
}

/// Wall-clock stamps for a report at `ms` milliseconds after the epoch (UTC).
pub fn wall_clock_ms(ms: u64) -> WallClock {
    WallClock {
        timestamp: ms / 1000,
        timestamp_ms: ms,
        ctime: ctime_utc(ms / 1000),
    }
}

/// `ctime()` text (without newline) for a UNIX time, in UTC: "Sun Nov 22 01:25:35 2026".
pub fn ctime_utc(t: u64) -> String {
    let days = t / 86400;
    let rem = t % 86400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let wday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(mo - 1) as usize];
    format!("{wday} {mon} {d:2} {h:02}:{m:02}:{s:02} {y}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_libc_format() {
        // 1795310737 = Sun Nov 22 01:25:37 2026 UTC (from the fio samples' timestamp).
        assert_eq!(ctime_utc(1_795_310_737), "Sun Nov 22 01:25:37 2026");
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
    }

    fn req(text: &str) -> Request {
        Request {
            job: Job::Text {
                text: text.into(),
                name: "a.fio".into(),
            },
            device: "null_blk".into(),
            ..Default::default()
        }
    }

    #[test]
    fn errors_say_where() {
        let e = run(&req("[a]\nrw=sideways\n")).unwrap_err();
        match &e {
            Error::Job {
                file, line, option, ..
            } => {
                assert_eq!(
                    (file.as_str(), *line, option.as_deref()),
                    ("a.fio", 2, Some("rw"))
                );
            }
            other => panic!("{other:?}"),
        }
        let mut r = req("[a]\nrw=read\nsize=1m\n");
        r.sets = vec!["completion_nsec=-3".into()];
        assert!(matches!(run(&r).unwrap_err(), Error::Set { key, .. } if key == "completion_nsec"));
        r.sets = vec!["nokey".into()];
        assert!(matches!(run(&r).unwrap_err(), Error::Set { key, .. } if key == "nokey"));
        r.sets.clear();
        r.device = "no-such-device".into();
        assert!(matches!(run(&r).unwrap_err(), Error::Device { .. }));
        let mut r = req("[a]\nrw=read\nsize=1m\n");
        r.options = vec!["--bogus=1".into()];
        assert!(matches!(run(&r).unwrap_err(), Error::Job { .. }));
        let mut r = req("[a]\nrw=randread\nsize=1g\ntime_based=1\nruntime=1h\n");
        r.max_events = Some(10_000);
        assert!(matches!(run(&r).unwrap_err(), Error::Run { .. }));
        // A job fio fails at setup: the caller hears fio's line and blksim's, with the job
        // file line, not a report in which the job did nothing.
        let r = req("[a]\nrw=read\nsize=1m\n[b]\nrw=read\nfilesize=1m\nsize=1m\noffset=2m\n");
        match run(&r).unwrap_err() {
            Error::Run { message } => {
                assert!(
                    message.starts_with("b: you need to specify valid offset="),
                    "{message}"
                );
                assert!(message.contains("a.fio:8: option 'offset'"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// What only the run can judge still names the job line and option: an unknown
    /// scheduler, a CPU the platform does not have. A profile that parses but does not
    /// build is the device's, whatever its file is called.
    #[test]
    fn errors_found_by_the_run_say_where() {
        let job_error = |text: &str| match run(&req(text)).unwrap_err() {
            Error::Job {
                file, line, option, ..
            } => (file, line, option),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            job_error("[a]\nrw=read\nsize=1m\nioscheduler=cfq\n"),
            ("a.fio".into(), 4, Some("ioscheduler".into()))
        );
        assert_eq!(
            job_error("[a]\nrw=read\nsize=1m\n\ncpus_allowed=7\n"),
            ("a.fio".into(), 5, Some("cpus_allowed".into()))
        );
        let dir = std::env::temp_dir().join(format!("blksim-api-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad-device");
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/null_blk.toml"),
        )
        .unwrap()
        .replace("irqmode = 2 ", "irqmode = 7 ");
        std::fs::write(&path, text).unwrap();
        let mut r = req("[a]\nrw=read\nsize=1m\n");
        r.device = path.display().to_string();
        match run(&r).unwrap_err() {
            Error::Device { message, .. } => assert!(message.contains("irqmode"), "{message}"),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Logs, the iolog and the blktrace files go to the sink the caller gives, and only
    /// there: in memory, the files the job names appear in the map and not on disk.
    #[test]
    fn files_go_to_the_given_sink() {
        let m = Memory::new();
        let mut r = req(
            "[a]\nrw=randread\nsize=4m\nnumjobs=2\nwrite_lat_log=mem-lat\nwrite_iolog=mem-iolog\n",
        );
        r.files = Some(Files(Arc::new(m.clone())));
        r.blktrace = Some("mem-trace".into());
        run(&r).unwrap();
        let f = m.files();
        let names: Vec<String> = f.keys().map(|p| p.display().to_string()).collect();
        for want in [
            "mem-lat_clat.1.log",
            "mem-lat_clat.2.log",
            "mem-iolog",
            "mem-trace/nullb0.blktrace.0",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
            assert!(
                !std::path::Path::new(want).exists(),
                "{want} was written to disk"
            );
        }
        let iolog = String::from_utf8(f[std::path::Path::new("mem-iolog")].clone()).unwrap();
        assert!(iolog.starts_with("fio version 3 iolog\n"), "{iolog}");
        assert_eq!(
            iolog.matches(" close").count(),
            2,
            "both clones' parts joined"
        );
        assert!(!names.iter().any(|n| n.ends_with(".part")), "{names:?}");
    }

    #[test]
    fn a_run_is_reproducible_byte_for_byte() {
        let r = req("[a]\nrw=randrw\nsize=4m\nioengine=libaio\niodepth=4\n");
        assert_eq!(json(&run(&r).unwrap(), true), json(&run(&r).unwrap(), true));
    }
}
