//! fio's command line, so that scripts written for fio run blksim unchanged: the terse
//! output (`--minimal`, `--terse-version`) laid out as the real fio lays it out, `--section`,
//! `--parse-only`, `--version`, fio's no-op options, the client/server options refused, and
//! the binary invoked as `fio` (a symlink) behaving as `blksim run`. The real fio (Debian's
//! 3.33, from `scripts/test.sh`) is the oracle for the layouts; without it the tests fail.

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

fn blksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blksim"))
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .args(args)
        .output()
        .expect("run blksim")
}

fn fio(args: &[&str]) -> Output {
    Command::new("fio").args(args).output().unwrap_or_else(|e| {
        panic!("real fio is not installed ({e}); scripts/test.sh installs it (Debian package fio)")
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmpdir(name: &str) -> PathBuf {
    common::fresh_dir("fiocli", name, false)
}

const JOB: &[&str] = &[
    "--name=a",
    "--rw=randrw",
    "--bs=4k",
    "--number_ios=1000",
    "--size=16m",
];

/// Each terse version has fio's fields in fio's places: the same count as the real fio's
/// line (less the 9 fields of the one disk blksim simulates, which fio's null engine has
/// not), the version, job name and group in front, and the percentile labels where fio
/// puts them.
#[test]
fn terse_lines_have_fios_layout_in_every_version() {
    for ver in ["2", "3", "4", "5"] {
        let tv = format!("--terse-version={ver}");
        let ours = blksim(&[&["run", "--device=null_blk", "--minimal", &tv], JOB].concat());
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        let theirs = fio(&[&["--ioengine=null", "--minimal", &tv], JOB].concat());
        assert!(theirs.status.success(), "{}", text(&theirs.stderr));
        let (a, b) = (text(&ours.stdout), text(&theirs.stdout));
        let fa: Vec<&str> = a.trim_end().split(';').collect();
        let fb: Vec<&str> = b.trim_end().split(';').collect();
        let disk = if ver == "2" { 0 } else { 9 };
        assert_eq!(fa.len(), fb.len() + disk, "v{ver}:\n{a}\n{b}");
        if disk > 0 {
            assert_eq!(
                fa[fb.len()],
                "nullb0",
                "v{ver}: the disk's fields come last"
            );
        }
        for (i, (x, y)) in fa.iter().zip(fb.iter()).enumerate() {
            // Labels (version, fio version, name, percentile names) agree exactly; numbers
            // agree in kind.
            let label = |s: &str| s.contains('=') || s.starts_with("fio") || s == "a";
            if i < 3 || label(y) {
                let lx = x.split('=').next().unwrap();
                let ly = y.split('=').next().unwrap();
                assert_eq!(lx, ly, "v{ver} field {i}");
            } else {
                assert_eq!(
                    x.ends_with('%'),
                    y.ends_with('%'),
                    "v{ver} field {i}: {x} vs {y}"
                );
                assert_eq!(
                    x.contains('.'),
                    y.contains('.'),
                    "v{ver} field {i}: {x} vs {y}"
                );
            }
        }
        // Read plus write KiB in fio's places (a direction is 41 fields, 47 in version 5):
        // the same 1000 I/Os of 4 KiB, whichever way the rwmix draws fell.
        let first = if ver == "2" { 4 } else { 5 };
        let span = if ver == "5" { 47 } else { 41 };
        let kib = |f: &[&str]| -> u64 {
            f[first].parse::<u64>().unwrap() + f[first + span].parse::<u64>().unwrap()
        };
        assert_eq!(kib(&fa), 4000, "v{ver}");
        assert_eq!(kib(&fb), 4000, "v{ver}");
    }
    // --minimal is --output-format=terse.
    let a = blksim(&[&["run", "--device=null_blk", "--minimal"], JOB].concat());
    let b = blksim(&[&["run", "--device=null_blk", "--output-format=terse"], JOB].concat());
    assert_eq!(a.stdout, b.stdout);
}

/// `--section` runs only the named sections; `--parse-only` parses and runs nothing;
/// `--version` prints fio's version line.
#[test]
fn section_parse_only_and_version() {
    let d = tmpdir("sections");
    let f = d.join("two.fio");
    std::fs::write(&f, "[global]\nrw=read\nsize=1m\n[first]\n[second]\nbs=8k\n").unwrap();
    let f = f.to_str().unwrap();
    let o = blksim(&[
        "run",
        f,
        "--device=null_blk",
        "--section=second",
        "--minimal",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert_eq!(t.lines().count(), 1, "{t}");
    assert!(t.starts_with("3;fio-3.33;second;"), "{t}");
    let o = blksim(&["run", f, "--device=null_blk", "--section=third"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--section=third"));
    let o = blksim(&["run", f, "--device=null_blk", "--parse-only"]);
    assert!(
        o.status.success() && o.stdout.is_empty(),
        "{}",
        text(&o.stdout)
    );
    let bad = d.join("bad.fio");
    std::fs::write(&bad, "[x]\nrw=sideways\n").unwrap();
    let o = blksim(&["run", bad.to_str().unwrap(), "--parse-only"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("bad.fio:2"), "{}", text(&o.stderr));
    let o = blksim(&["run", "--version"]);
    assert_eq!(text(&o.stdout), "fio-3.33\n");
    assert_eq!(text(&fio(&["--version"]).stdout), "fio-3.33\n");
}

/// fio's display and debug options change nothing (a note on stderr); the client/server
/// options are refused with a reason.
#[test]
fn fio_top_level_options_are_accepted_or_refused_clearly() {
    let plain = blksim(&[&["run", "--device=null_blk", "--output-format=json"], JOB].concat());
    let noisy = blksim(
        &[
            &[
                "run",
                "--device=null_blk",
                "--output-format=json",
                "--eta=never",
                "--eta-newline",
                "2",
                "--status-interval=1",
                "--debug=io",
                "--warnings-fatal",
            ],
            JOB,
        ]
        .concat(),
    );
    assert!(noisy.status.success(), "{}", text(&noisy.stderr));
    assert_eq!(plain.stdout, noisy.stdout);
    assert!(text(&noisy.stderr).contains("'--eta' has no meaning"));
    for k in ["--client=host1", "--server", "--daemonize=/tmp/p"] {
        let o = blksim(&[&["run", "--device=null_blk", k], JOB].concat());
        assert!(!o.status.success(), "{k}");
        assert!(text(&o.stderr).contains("client/server mode"), "{k}");
    }
    // An engine's own option on the command line names the unsupported engine.
    let o = blksim(&[
        "run",
        "--device=null_blk",
        "--name=x",
        "--ioengine=rbd",
        "--pool=p",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("ioengine 'rbd' is not supported"),
        "{}",
        text(&o.stderr)
    );
    // fio's `--profile` runs a builtin test (tiobench, act), which blksim has not.
    let o = blksim(&[&["run", "--device=null_blk", "--profile=tiobench"], JOB].concat());
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("builtin profiles"),
        "{}",
        text(&o.stderr)
    );
}

/// A symlink named `fio` to blksim runs fio's command lines: `fio --version`, and a job
/// whose JSON report fio's tools read.
#[test]
fn invoked_as_fio_it_runs_fio_command_lines() {
    let d = tmpdir("symlink");
    let link = d.join("fio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_blksim"), &link).unwrap();
    let o = Command::new(&link).arg("--version").output().unwrap();
    assert_eq!(text(&o.stdout), "fio-3.33\n");
    let o = Command::new(&link)
        .args(JOB)
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["fio version"], "fio-3.33");
    assert_eq!(v["jobs"][0]["jobname"], "a");
    assert!(v["blksim"].is_object(), "simulated");
}

/// The progress bar: drawn on stderr only when stderr is a terminal and the run lasts over a
/// second (here under `script`, which gives the run a pseudo-terminal), cleared at the end,
/// and without effect on the report; a run whose stderr is a pipe prints no bar.
#[test]
fn progress_bar_only_on_a_terminal_and_without_effect() {
    let d = tmpdir("progress");
    let bin = env!("CARGO_BIN_EXE_blksim");
    let job = "run --device=emmc-hbg4a2 --name=r --rw=randread --ioengine=libaio --iodepth=32 \
               --runtime=150 --time_based --output-format=json";
    let tty_json = d.join("tty.json");
    let typescript = d.join("typescript");
    let o = Command::new("script")
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .args(["-qec"])
        .arg(format!("{bin} {job} --output={}", tty_json.display()))
        .arg(&typescript)
        .output()
        .unwrap_or_else(|e| panic!("script (util-linux) is needed for this test: {e}"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ts = std::fs::read(&typescript).unwrap();
    let ts = String::from_utf8_lossy(&ts);
    assert!(
        ts.contains("simulated") && ts.contains("I/Os"),
        "no bar drawn:\n{ts}"
    );
    let piped = blksim(&job.split(' ').collect::<Vec<_>>());
    assert!(piped.status.success());
    assert!(
        !text(&piped.stderr).contains("simulated"),
        "a bar on a pipe"
    );
    assert_eq!(
        std::fs::read(&tty_json).unwrap(),
        piped.stdout,
        "the report is the same with and without the bar"
    );
}

/// The JSON's "global options" and "job options" list the options in fio's order: by
/// priority first (`kb_base`, `unit_base`, `cpus_allowed_policy` before the others,
/// `filename` after them), as written otherwise; compared key by key with the real fio.
#[test]
fn option_lists_are_in_fios_order() {
    let d = tmpdir("order");
    let f = d.join("order.fio");
    std::fs::write(
        &f,
        format!(
            "[global]\nfilename={0}/x.dat\nsize=1m\nunit_base=8\nrw=read\nkb_base=1000\n\
             ioengine=null\ncpus_allowed_policy=split\n[a]\nnumber_ios=10\nfilename={0}/y.dat\n\
             bs=8k\nkb_base=1024\n",
            d.display()
        ),
    )
    .unwrap();
    let f = f.to_str().unwrap();
    // Read the keys from the text: a JSON map would not keep their order.
    let keys = |out: &Output| -> (Vec<String>, Vec<String>) {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let t = text(&out.stdout);
        let names = |obj: &str| -> Vec<String> {
            let from = t.find(&format!("\"{obj}\" : {{")).expect(obj);
            t[from..]
                .lines()
                .skip(1)
                .take_while(|l| !l.trim_start().starts_with('}'))
                .map(|l| l.trim().split('"').nth(1).unwrap().to_string())
                .collect()
        };
        (names("global options"), names("job options"))
    };
    let ours = keys(&blksim(&[
        "run",
        f,
        "--device=null_blk",
        "--output-format=json",
    ]));
    let theirs = keys(&fio(&[f, "--output-format=json"]));
    assert_eq!(ours, theirs);
    assert_eq!(ours.0.first().map(String::as_str), Some("unit_base"));
    assert_eq!(ours.0.last().map(String::as_str), Some("filename"));
}
