//! blksim: a fast, deterministic simulator of the Linux block I/O path.
//!
//! The binary only wires the crates together: fio job files and options in
//! (blksim-job), a device profile (blksim-sim::profile), a run (blksim-sim), fio's report
//! out (blksim-report).

mod bench;
mod calibrate;
mod compare;
mod fuzz;
mod probe;
mod replay;
mod sweep;

use blksim::explain;
use blksim_report::FIO_VERSION;
use blksim_sim::profile::{Profile, BUNDLED, DEFAULT_DEVICE};
use blksim_sim::setup::{self, RunOptions, WallClock};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: blksim run [JOBFILE...] [FIO OPTIONS...] [BLKSIM OPTIONS...]
       blksim devices
       blksim params
       blksim bench [--workload=null|emmc|server|write] [--ios=N] [--runs=N] [--runtime=S]
       blksim compare A.json B.json [C.json ...]
       blksim calibrate RESULTS... --device=BASE [--fit=KEY,...] [--out=PROFILE.toml]
       blksim probe PATH|sim:PROFILE [--size=N] [--time=S] [--write] [--out=PROFILE.toml]
       blksim sweep SWEEP.toml [--out=FILE.parquet] [--csv=FILE] [--shard=K/N]
       blksim replay TRACE [fio and blksim options]
       blksim fuzz [--seconds=N] [--seed=N] [--cases=N] [...]
       blksim --cmdhelp[=OPTION]

Runs fio jobs against a simulated block device in virtual time and prints fio's report.

fio options: as on fio's command line (--name=a --rw=randread --bs=4k --name=b ...); each
--name starts a job. Given together with job files, fio options apply to every job of the
files and win over them (a blksim convenience: `blksim run ssd-test.fio --runtime=1`).

blksim options:
  --device=NAME|PATH     device profile (bundled name or TOML file; default: the bundled default)
  --set=KEY=VALUE        override one profile field, repeatable: --set=irqmode=2,
                         --set=queue.nr_requests=64, --set=queue.iosched.fifo_batch=8
  --seed=N               root seed for every random stream (default fixed)
  --explain=N            keep the N slowest I/Os' paths (steps, longest wait, overtakers):
                         printed on stderr, and under blksim.explain in the JSON
  --seeds=N              run N times, seeds N0..N0+N-1 (N0 = --seed); the report is the first
                         run's, and its JSON's blksim.seeds holds every run's figures for
                         `blksim compare` (means, 95% intervals of the deltas)
  --output=FILE          write the report to FILE
  --output-format=FMT    normal (default), json, json+, terse, html, or a comma list
                         (normal,json); html alone is the output, with others it goes to
                         OUTPUT.html (blksim-report.html when printing to stdout)
  --blktrace=DIR         write blktrace binary files (DIR/<dev>.blktrace.<cpu>)
  --max-events=N         stop a runaway simulation after N events
  --cmdhelp[=OPTION]     list fio options (or describe one)

fio's own command-line options work as in fio: --output-format=normal,json,json+,terse,
--minimal, --terse-version=2..5, --section=NAME, --parse-only, --version; --eta,
--status-interval, --debug and the like are accepted and do nothing. Invoked as `fio`
(ln -s blksim fio), blksim runs as `blksim run`.
";

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let argv0 = argv.next().unwrap_or_default();
    let mut args: Vec<String> = argv.collect();
    // Invoked as `fio` (a symlink), blksim is `blksim run`: scripts that call fio simulate
    // unchanged with the link first on PATH.
    let as_fio = std::path::Path::new(&argv0)
        .file_name()
        .is_some_and(|n| n == "fio");
    if as_fio {
        args.insert(0, "run".to_string());
    }
    match real_main(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("blksim: {e}");
            ExitCode::from(1)
        }
    }
}

fn real_main(args: &[String]) -> Result<ExitCode, String> {
    let Some(cmd) = args.first() else {
        print!("{USAGE}");
        return Err("no command given".into());
    };
    if let Some(rest) = cmd.strip_prefix("--cmdhelp") {
        return cmdhelp(rest).map(|()| ExitCode::SUCCESS);
    }
    match cmd.as_str() {
        "run" => run(&args[1..]),
        "--version" | "-V" => write_stdout(
            format!("blksim {} ({FIO_VERSION})\n", env!("CARGO_PKG_VERSION")).as_bytes(),
        )
        .map(|()| ExitCode::SUCCESS),
        "devices" => devices().map(|()| ExitCode::SUCCESS),
        "params" => params().map(|()| ExitCode::SUCCESS),
        "bench" => bench::bench(&args[1..]).map(|()| ExitCode::SUCCESS),
        "replay" => {
            let Some(trace) = args.get(1).filter(|a| !a.starts_with('-')) else {
                return write_stdout(replay::USAGE.as_bytes()).map(|()| ExitCode::FAILURE);
            };
            let (text, end) = replay::summary(trace, &replay::run_args(trace, &args[2..], 0))?;
            eprint!("{text}");
            run(&replay::run_args(trace, &args[2..], end))
        }
        "sweep" => {
            let text = sweep::main(&args[1..])?;
            write_stdout(text.as_bytes()).map(|()| ExitCode::SUCCESS)
        }
        "probe" => {
            let text = probe::main(&args[1..])?;
            write_stdout(text.as_bytes()).map(|()| ExitCode::SUCCESS)
        }
        "calibrate" => {
            let text = calibrate::main(&args[1..])?;
            write_stdout(text.as_bytes()).map(|()| ExitCode::SUCCESS)
        }
        "compare" => {
            let text = compare::main(&args[1..])?;
            write_stdout(text.as_bytes()).map(|()| ExitCode::SUCCESS)
        }
        "fuzz" => {
            if args[1..].iter().any(|a| a == "--help" || a == "-h") {
                return write_stdout(fuzz::USAGE.as_bytes()).map(|()| ExitCode::SUCCESS);
            }
            if fuzz::main(&args[1..])? {
                Ok(ExitCode::SUCCESS)
            } else {
                Err("fuzz: some cases failed (repro commands above)".into())
            }
        }
        "-h" | "--help" | "help" => {
            print!("{USAGE}\n{}", fuzz::USAGE);
            Ok(ExitCode::SUCCESS)
        }
        other => Err(format!(
            "unknown command '{other}' (expected run, devices, params, bench, compare, calibrate, probe, sweep, replay, fuzz; see --help)"
        )),
    }
}

/// Write to stdout; a closed pipe (`blksim params | head`) ends quietly, not with a panic.
fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    let mut so = std::io::stdout().lock();
    match so.write_all(bytes).and_then(|_| so.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("stdout: {e}")),
    }
}

fn cmdhelp(rest: &str) -> Result<(), String> {
    let opt = rest
        .strip_prefix('=')
        .filter(|s| !s.is_empty() && *s != "all");
    let text = blksim_job::options::cmdhelp(opt)?;
    write_stdout(text.as_bytes())
}

fn devices() -> Result<(), String> {
    use std::fmt::Write as _;
    let mut o = String::new();
    for b in BUNDLED {
        let p = Profile::parse(b.toml, b.name)?;
        let mark = if b.name == DEFAULT_DEVICE {
            " (default)"
        } else {
            ""
        };
        let _ = writeln!(o, "{:<18} {}{}", b.name, p.description, mark);
    }
    write_stdout(o.as_bytes())
}

/// `blksim params`: every model parameter with its unit, default and source, from the one
/// table each layer defines it in.
fn params() -> Result<(), String> {
    use std::fmt::Write as _;
    let mut o = String::new();
    use blksim_core::ParamDef;
    let line = |o: &mut String, prefix: &str, p: &ParamDef, current: Option<&str>| {
        let value = match current {
            Some(v) => format!("value {v:<12}"),
            None => format!("default {:<12}", p.default),
        };
        let _ = writeln!(
            o,
            "  {prefix}{:<28} {:<10} {value} range {:<24} {}  [{}]",
            p.key,
            p.unit,
            p.bounds_text(),
            p.doc,
            p.source
        );
    };
    for t in blksim_sim::params::PARAM_TABLES {
        let _ = writeln!(o, "{}", t.title);
        for p in t.defs {
            line(&mut o, t.prefix, p, None);
        }
        o.push('\n');
    }
    // Elevator tunables live in each elevator (sysfs `queue/iosched/`), shown by instance.
    let ep = blksim_block::elevator::ElvParams {
        nr_requests: 128,
        queue_depth: 64,
        rotational: false,
        erase_block_bytes: None,
        seed: 0,
    };
    for name in blksim_sched::ELEVATOR_NAMES
        .iter()
        .filter(|n| **n != "none")
    {
        if let Some(e) = blksim_sched::make_elevator(name, &ep)? {
            let _ = writeln!(o, "{name} (--set=queue.iosched.KEY)");
            for t in e.tunables() {
                line(&mut o, "queue.iosched.", t.def, Some(&t.value));
            }
            o.push('\n');
        }
    }
    write_stdout(o.as_bytes())
}

struct Cli {
    device: String,
    sets: Vec<String>,
    opts: RunOptions,
    output: Option<PathBuf>,
    formats: Vec<String>,
    jobfiles: Vec<PathBuf>,
    fio_args: Vec<String>,
    /// fio's `--terse-version` (3 unless given).
    terse_version: u32,
    /// fio's `--section`: run only these job sections.
    sections: Vec<String>,
    parse_only: bool,
    version: bool,
    /// fio's options that have nothing to do in a simulation, for one note each.
    ignored: Vec<String>,
    /// `--seeds=N`: repeat the run over N seeds.
    seeds: u64,
}

/// fio's top-level options that change nothing in a simulation (progress display, debug
/// output, resource limits, ...): accepted, with one note.
const FIO_NO_MEANING: &[&str] = &[
    "--eta",
    "--eta-newline",
    "--eta-interval",
    "--status-interval",
    "--debug",
    "--warnings-fatal",
    "--bandwidth-log",
    "--showcmd",
    "--readonly",
    "--alloc-size",
    "--max-jobs",
    "--aux-path",
    "--idle-prof",
    "--inflate-log",
    "--trigger-file",
    "--trigger-timeout",
    "--trigger",
    "--trigger-remote",
    "--append-terse",
    "--crctest",
];

/// fio's distributed mode: refused, a simulation runs here.
const FIO_REFUSED: &[&str] = &["--client", "--server", "--daemonize", "--remote-config"];

fn parse_cli(args: &[String]) -> Result<Cli, String> {
    let mut cli = Cli {
        device: DEFAULT_DEVICE.to_string(),
        sets: Vec::new(),
        opts: RunOptions::default(),
        output: None,
        formats: vec!["normal".into()],
        jobfiles: Vec::new(),
        fio_args: Vec::new(),
        terse_version: 3,
        sections: Vec::new(),
        parse_only: false,
        version: false,
        ignored: Vec::new(),
        seeds: 1,
    };
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (key, val) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut take = |name: &str| -> Result<String, String> {
            match &val {
                Some(v) => Ok(v.clone()),
                None => {
                    i += 1;
                    args.get(i)
                        .cloned()
                        .ok_or_else(|| format!("{name} needs a value"))
                }
            }
        };
        match key {
            "--device" => cli.device = take("--device")?,
            "--set" => cli.sets.push(take("--set")?),
            "--seed" => {
                let v = take("--seed")?;
                cli.opts.seed =
                    parse_u64(&v).ok_or_else(|| format!("--seed={v}: expected a whole number"))?;
            }
            "--output" => cli.output = Some(PathBuf::from(take("--output")?)),
            "--output-format" => {
                let v = take("--output-format")?;
                let mut f = Vec::new();
                for part in v.split(',') {
                    match part.trim() {
                        "normal" | "json" | "json+" | "terse" | "html" => f.push(part.trim().to_string()),
                        other => return Err(format!("--output-format: unknown format '{other}' (expected normal, json, json+, terse, html)")),
                    }
                }
                cli.formats = f;
            }
            // fio: `--minimal` is terse output only.
            "--minimal" => cli.formats = vec!["terse".into()],
            "--terse-version" => {
                let v = take("--terse-version")?;
                cli.terse_version = match v.trim().parse::<u32>() {
                    Ok(n @ 2..=5) => n,
                    _ => return Err(format!("--terse-version={v}: expected 2, 3, 4 or 5")),
                };
            }
            "--section" => cli.sections.push(take("--section")?),
            "--explain" => {
                let v = take("--explain")?;
                cli.opts.explain = parse_u64(&v)
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| format!("--explain={v}: expected a count from 1 to 1000"))?
                    as usize;
            }
            "--seeds" => {
                let v = take("--seeds")?;
                cli.seeds = parse_u64(&v)
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| format!("--seeds={v}: expected a count from 1 to 1000"))?;
            }
            "--parse-only" => cli.parse_only = true,
            // fio's `-p`/`--profile` runs one of its builtin tests (tiobench, act); a job's
            // `profile=` is stored and never read, so only the command line's is refused.
            "--profile" | "-p" => {
                return Err(format!(
                    "--profile: fio's builtin profiles ({}) are not supported by blksim; write the profile's jobs as a job file",
                    val.map_or_else(|| "tiobench, act".to_string(), |v| format!("'{v}'"))
                ))
            }
            "--version" => cli.version = true,
            k if FIO_REFUSED.contains(&k) => {
                return Err(format!(
                    "{k}: fio's client/server mode is not supported; blksim simulates the job here"
                ))
            }
            k if FIO_NO_MEANING.contains(&k) => {
                // Options that take a value take the next argument when not given with '='.
                let takes_value = !matches!(
                    k,
                    "--readonly"
                        | "--showcmd"
                        | "--append-terse"
                        | "--warnings-fatal"
                        | "--inflate-log"
                );
                if val.is_none()
                    && takes_value
                    && args.get(i + 1).is_some_and(|n| !n.starts_with('-'))
                {
                    i += 1;
                }
                cli.ignored.push(k.to_string());
            }
            "--blktrace" => cli.opts.blktrace = Some(PathBuf::from(take("--blktrace")?)),
            "--max-events" => {
                let v = take("--max-events")?;
                cli.opts.max_events = Some(
                    parse_u64(&v)
                        .ok_or_else(|| format!("--max-events={v}: expected a whole number"))?,
                );
            }
            // Test only, not in the usage text: lose the N-th bio completion, a bug injected
            // so that `blksim fuzz`'s own test sees the simulator report it.
            "--debug-drop-completion" => {
                let v = take("--debug-drop-completion")?;
                cli.opts.debug_drop_completion = parse_u64(&v).ok_or_else(|| {
                    format!("--debug-drop-completion={v}: expected a whole number")
                })?;
            }
            _ => rest.push(a.clone()),
        }
        i += 1;
    }
    let (fio, other) = blksim_job::cli::split_cli_options(&rest);
    for (_, a) in &other {
        if a.starts_with('-') {
            if let Some(e) = blksim_job::cli::unsupported_engine_error(&fio) {
                return Err(e.to_string());
            }
            let key = a.trim_start_matches('-').split('=').next().unwrap_or("");
            let hint = blksim_job::suggest(key)
                .map(|s| format!(" (did you mean '--{s}'?)"))
                .unwrap_or_default();
            return Err(format!("<command line>: unknown option '{a}'{hint}"));
        }
        cli.jobfiles.push(PathBuf::from(a));
    }
    // Keep the fio options in their original order, re-joined for the job parser.
    for o in fio {
        cli.fio_args.push(match o.value {
            Some(v) => format!("--{}={}", o.key, v),
            None => format!("--{}", o.key),
        });
    }
    Ok(cli)
}

pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// `blksim run`: the exit status is fio's, the number of jobs an I/O error stopped.
fn run(args: &[String]) -> Result<ExitCode, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return write_stdout(USAGE.as_bytes()).map(|()| ExitCode::SUCCESS);
    }
    let cli = parse_cli(args)?;
    if cli.version {
        return write_stdout(format!("{FIO_VERSION}\n").as_bytes()).map(|()| ExitCode::SUCCESS);
    }
    for k in &cli.ignored {
        eprintln!("blksim: note: fio option '{k}' has no meaning in a simulation; ignored");
    }
    let mut jobs = if cli.jobfiles.is_empty() {
        if cli.fio_args.is_empty() {
            return Err(
                "nothing to run: give a job file or fio options (--name=... --rw=...)".into(),
            );
        }
        blksim_job::cli::parse_cli(&cli.fio_args).map_err(|e| e.to_string())?
    } else {
        let mut set =
            blksim_job::jobfile::parse_job_files(&cli.jobfiles).map_err(|e| e.to_string())?;
        if !cli.fio_args.is_empty() {
            let (opts, _) = blksim_job::cli::split_cli_options(&cli.fio_args);
            blksim_job::cli::apply_overrides(&mut set, &opts).map_err(|e| e.to_string())?;
        }
        set
    };
    // fio's `--section`: only the named job sections run (their [global] options apply).
    if !cli.sections.is_empty() {
        for sec in &cli.sections {
            if !jobs.jobs.iter().any(|j| &j.name == sec) {
                return Err(format!("--section={sec}: no job section of that name"));
            }
        }
        jobs.jobs.retain(|j| cli.sections.contains(&j.name));
    }
    if cli.parse_only {
        return Ok(ExitCode::SUCCESS);
    }
    setup::prepare_replay(&mut jobs).map_err(|e| e.to_string())?;
    let mut notes_seen = std::collections::BTreeSet::new();
    for j in &jobs.jobs {
        for n in &j.notes {
            if notes_seen.insert(n.clone()) {
                eprintln!("blksim: {n}");
            }
        }
    }
    let mut profile = Profile::load(&cli.device)?;
    for s in &cli.sets {
        profile.set(s)?;
    }
    let mut opts = cli.opts.clone();
    opts.progress = progress_bar();
    opts.debug_events = std::env::var_os("BLKSIM_DEBUG_EVENTS").is_some();
    opts.timeline = cli.formats.iter().any(|f| f == "html");
    let out = setup::run(&jobs, &profile, &opts)?;
    for t in &out.tasks {
        if let Some(m) = &t.setup_failure {
            eprintln!("{m}");
        }
        if let Some((m, n)) = t.draw_failure {
            for _ in 0..n {
                eprintln!("{m}");
            }
        }
        for m in &t.rate_failures {
            eprintln!("{m}");
        }
        for note in &t.replay_notes {
            eprintln!("blksim: {}: {note}", t.name);
        }
        if let (n @ 1.., Some(first)) = (t.replay_skipped.0, &t.replay_skipped.1) {
            eprintln!(
                "blksim: {}: replay_skip_bad: {n} malformed trace lines passed over (the first: {first})",
                t.name
            );
        }
    }
    // fio's `__io_u_log_error` for each failed io_u it did not ignore (the first stopped its
    // job).
    let dev = setup::devname(&profile);
    // Then `td_io_queue`'s hint for a refused first O_DIRECT I/O, and the thread's exit line
    // (`td_verror`'s text), which fio prints on stdout; here on stderr, to keep the report
    // what `--output-format` asked for.
    for e in &out.fatal_errors {
        let dir = if e.sync { "sync" } else { e.ddir.name() };
        let text = blksim_report::report::strerror(e.errno);
        if let Some((lat, max)) = e.exceeded {
            eprintln!(
                "fio: latency of {lat} nsec exceeds specified max ({max} nsec): /dev/{dev} {dir} {} {}",
                e.offset, e.len
            );
        }
        if e.logged {
            eprintln!(
                "fio: io_u error on file /dev/{dev}: {text}: {dir} offset={}, buflen={}",
                e.offset, e.len
            );
        }
        if e.first_direct {
            eprintln!(
                "fio: first direct IO errored. File system may not support direct IO, or \
                 iomem_align= is bad, or invalid block size. Try setting direct=0."
            );
        }
    }
    let mut stopped: Vec<usize> = out.fatal_errors.iter().map(|e| e.task).collect();
    // A job below its minimum rate stops without a failed io_u.
    stopped.extend((0..out.tasks.len()).filter(|&t| !out.tasks[t].rate_failures.is_empty()));
    stopped.sort_unstable();
    stopped.dedup();
    for t in stopped {
        eprintln!(
            "fio: pid={}, err={}/{}",
            blksim_report::report::FAKE_PID_BASE + t as i32,
            out.tasks[t].error,
            out.tasks[t].verror()
        );
    }
    let wall = wall_clock();
    let mut report = setup::build_report(&jobs, &profile, &cli.opts, &out, &wall);
    if cli.opts.explain > 0 {
        eprint!("{}", explain::text(&out));
        if let Some(b) = report.blksim.as_mut() {
            b.push("explain", explain::json(&out));
        }
    }
    if cli.seeds > 1 {
        add_seed_runs(&mut report, &jobs, &profile, &cli, &wall)?;
    }
    // As fio does with `--output-format=normal,json`: the normal header (job lines, version,
    // "Starting ..."), then the JSON document(s), then the normal results.
    let mut buf: Vec<u8> = Vec::new();
    let has_normal = cli.formats.iter().any(|f| f == "normal");
    let werr = |e: std::io::Error| format!("writing report: {e}");
    if has_normal {
        blksim_report::normal::write_normal_header(&report, &mut buf).map_err(werr)?;
    }
    // fio's output buffers in their order: terse, JSON, normal.
    if cli.formats.iter().any(|f| f == "terse") {
        blksim_report::terse::write_terse(&report, cli.terse_version, &mut buf).map_err(werr)?;
    }
    for f in cli.formats.iter().filter(|f| *f == "json" || *f == "json+") {
        blksim_report::json::write_json(&report, f == "json+", &mut buf).map_err(werr)?;
    }
    if has_normal {
        blksim_report::normal::write_normal_results(&report, &mut buf).map_err(werr)?;
    }
    // The HTML page is a document of its own: alone, it is the output; with other formats
    // it goes beside them, to OUTPUT.html (or blksim-report.html next to stdout).
    if cli.formats.iter().any(|f| f == "html") {
        let mut page = Vec::new();
        let extra = blksim_report::html::HtmlExtra {
            device: profile.name.clone(),
            description: profile.description.clone(),
            params: profile
                .values
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone(), v.origin.clone()))
                .collect(),
            explain: explain::html(&out),
        };
        blksim_report::html::write_html(&report, &extra, &mut page).map_err(werr)?;
        if cli.formats.len() == 1 {
            buf = page;
        } else {
            let path = match &cli.output {
                Some(p) => PathBuf::from(format!("{}.html", p.display())),
                None => PathBuf::from("blksim-report.html"),
            };
            std::fs::write(&path, &page).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("blksim: HTML report written to {}", path.display());
        }
    }
    match &cli.output {
        Some(p) => std::fs::write(p, &buf).map_err(|e| format!("--output={}: {e}", p.display()))?,
        None => write_stdout(&buf)?,
    }
    // What a power cut did, and whether it broke a FLUSH/FUA promise (the run then fails,
    // as fio's verify does on bad data).
    if let Some(pc) = &out.power_cut {
        eprintln!(
            "blksim: power cut at {} ns: {} sectors changed, {} in-flight I/Os failed; {} sectors lost as FLUSH/FUA allow, {} lost against them",
            pc.at_ns,
            pc.changed_sectors,
            pc.aborted_ios,
            out.integrity_lost_allowed,
            out.integrity_violations
        );
    }
    if out.fault_stats.iter().any(|&(_, n)| n > 0) {
        let f: Vec<String> = out
            .fault_stats
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        eprintln!("blksim: faults: {}", f.join(" "));
    }
    if let Some(v) = &out.integrity_first_violation {
        eprintln!("blksim: integrity violation: {v}");
    }
    // fio exits with the number of jobs that ended with an error (`exit_value++`).
    let failed = out
        .tasks
        .iter()
        .filter(|t| t.error != 0 || t.setup_failed)
        .count();
    let failed = failed.max(usize::from(out.integrity_violations > 0));
    Ok(ExitCode::from(failed.min(255) as u8))
}

/// A progress bar on stderr for runs that last more than a second, when stderr is a
/// terminal (nothing otherwise: scripts and pipes see no change). It shows the simulated
/// time, the I/Os done and, for time-based jobs, how far the run is and the wall time left.
fn progress_bar() -> Option<setup::ProgressHook> {
    use std::io::IsTerminal;
    use std::sync::Mutex;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let t0 = std::time::Instant::now();
    let bar: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    Some(std::sync::Arc::new(move |p: &setup::Progress| {
        let mut b = bar.lock().unwrap_or_else(|e| e.into_inner());
        if p.finished {
            if let Some(b) = b.take() {
                b.finish_and_clear();
            }
            return;
        }
        if b.is_none() {
            if t0.elapsed() < std::time::Duration::from_secs(1) {
                return;
            }
            let pb = match p.end_ns {
                Some(e) => indicatif::ProgressBar::new(e),
                None => indicatif::ProgressBar::new_spinner(),
            };
            pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            let style = if p.end_ns.is_some() {
                "{bar:30} {percent:>3}% {msg} eta {eta}"
            } else {
                "{spinner} {msg}"
            };
            if let Ok(st) = indicatif::ProgressStyle::with_template(style) {
                pb.set_style(st);
            }
            *b = Some(pb);
        }
        if let Some(pb) = b.as_ref() {
            if p.end_ns.is_some() {
                pb.set_position(p.now_ns);
            } else {
                pb.tick();
            }
            pb.set_message(format!(
                "simulated {:.3} s, {} I/Os",
                p.now_ns as f64 / 1e9,
                p.ios_done
            ));
        }
    }))
}

/// A bar of counted steps on stderr, when it is a terminal (`probe`, `sweep`).
pub(crate) fn steps_bar(template: &str) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(1);
    b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(st) = indicatif::ProgressStyle::with_template(template) {
        b.set_style(st);
    }
    Some(b)
}

/// `--seeds=N`: the run again with seeds `seed + 1 ..= seed + N - 1` (without log files or
/// traces, which stay the first run's), every run's figures under `blksim.seeds`.
fn add_seed_runs(
    report: &mut blksim_report::RunReport,
    jobs: &blksim_job::JobSet,
    profile: &Profile,
    cli: &Cli,
    wall: &WallClock,
) -> Result<(), String> {
    use blksim_report::JsonValue;
    let entry = |seed: u64, r: &blksim_report::RunReport| {
        let mut e = JsonValue::object();
        e.push("seed", JsonValue::UInt(seed))
            .push("jobs", compare::seed_jobs(r));
        e
    };
    let mut all = vec![entry(cli.opts.seed, report)];
    let mut quiet = jobs.clone();
    for j in &mut quiet.jobs {
        // The first run's files stay as it wrote them: no logs, no iolog, and a merged
        // blktrace replayed from where that run wrote it.
        j.logs = blksim_job::LogSpec::default();
        j.write_iolog = None;
        if let Some(merged) = j.replay.merge_file.take() {
            j.replay.file = Some(merged);
            j.replay.merge_scalars.clear();
            j.replay.merge_iters.clear();
        }
    }
    for k in 1..cli.seeds {
        let mut opts = cli.opts.clone();
        opts.seed = cli.opts.seed.wrapping_add(k);
        opts.blktrace = None;
        opts.explain = 0;
        let out = setup::run(&quiet, profile, &opts)?;
        let r = setup::build_report(&quiet, profile, &opts, &out, wall);
        all.push(entry(opts.seed, &r));
    }
    if let Some(b) = report.blksim.as_mut() {
        b.push("seeds", JsonValue::Array(all));
    }
    Ok(())
}

/// Wall-clock stamps for the report header (the only fields that may differ between runs).
/// `BLKSIM_FAKE_TIME=<unix seconds>` pins them, for byte-identical comparisons.
fn wall_clock() -> WallClock {
    let ms = match std::env::var("BLKSIM_FAKE_TIME")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(s) => s.saturating_mul(1000),
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    };
    blksim::api::wall_clock_ms(ms)
}
