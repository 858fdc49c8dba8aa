//! Every run is bounded by its events: inputs that used to hang finish, huge time values cost
//! what small ones cost, time parameters have bounds with clear errors, virtual time cannot
//! wrap, and errors found after parsing name the file and line they come from.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A liveness guard, not a speed target: every run here takes milliseconds; a hang would
/// otherwise stall the suite forever.
const HANG: Duration = Duration::from_secs(120);

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run blksim");
    let t0 = Instant::now();
    // Drain the pipes on threads so a large report cannot block the child.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let h1 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let h2 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > HANG {
            let _ = child.kill();
            panic!("blksim {args:?} did not finish within {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        ok: status.success(),
        stdout: h1.join().unwrap(),
        stderr: h2.join().unwrap(),
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let o = run(&a);
    assert!(o.ok, "{args:?}: {}", o.stderr);
    serde_json::from_str(&o.stdout).expect("JSON")
}

fn ios(v: &serde_json::Value) -> u64 {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            ["read", "write", "trim"]
                .iter()
                .map(|d| j[d]["total_ios"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum()
}

/// Verify runs with random block sizes on the eMMC profiles used to spin forever (an
/// unaligned read's last NAND round underflowed); they finish, with events a small multiple
/// of their I/Os and every read checked.
#[test]
fn former_hangs_finish_in_a_few_events_per_io() {
    for (dev, bsrange) in [
        ("emmc-hbg4a2", "512-128k"),
        ("emmc-hbg4a2", "4k-128k"),
        ("emmc-512k-2009", "512-64k"),
    ] {
        let bs = format!("--bsrange={bsrange}");
        let dev = format!("--device={dev}");
        let v = json(&[
            "run",
            "--name=v",
            "--rw=randwrite",
            &bs,
            "--size=8m",
            "--io_size=16k",
            "--verify=crc32c",
            &dev,
        ]);
        let events = v["blksim"]["events"].as_u64().unwrap();
        let n = ios(&v);
        assert!(
            n > 0 && events <= 20 * n,
            "{dev} {bs}: {events} events for {n} I/Os"
        );
        assert!(v["blksim"]["integrity"]["reads_checked"].as_u64().unwrap() > 0);
        assert_eq!(v["blksim"]["integrity"]["mismatches"], 0);
    }
}

/// Thousands of hardware queues under a single-queue elevator (eraseblock, as mq-deadline and
/// bfq): its timer runs the hctx of the CPU it fires on (`blk_mq_run_hw_queues` →
/// `blk_mq_get_sq_hctx`), not all 4096, which cost a run and a parked dispatch context per
/// hctx and tick (over 500 000 events for this job). Wall time is not asserted here (the
/// fuzzer's per-event budget covers it); the run must finish, with every request completed,
/// in a few events per request.
#[test]
fn many_hardware_queues_cost_what_their_events_cost() {
    let d = std::env::temp_dir().join(format!("blksim-bounded-{}-hctxs", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("J.fio");
    let lines = [
        "[job0]",
        "ioengine=posixaio",
        "iodepth=7",
        "bsrange=8k-128k",
        "size=128k",
        "new_group",
        "ioscheduler=eraseblock",
        "offset=0",
        "continue_on_error=io",
        "[job1]",
        "rw=randwrite",
        "ioengine=io_uring",
        "iodepth=31",
        "bs=4k",
        "size=2740k",
        "fileoffset=0",
        "random_generator=lfsr",
        "sync=1",
        "numa_cpu_nodes=1",
    ];
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let f = f.display().to_string();
    let args = [
        "run",
        &f,
        "--device=null_blk",
        "--set=submit_queues=4096",
        "--set=platform.elv_merge_ns=20000000",
        "--set=platform.complete_ns=328",
        "--set=queue.iosched.erase_block_kb=1",
        "--seed=3846403616417101723",
    ];
    let v = json(&args);
    let events = v["blksim"]["events"].as_u64().unwrap();
    let bios = &v["blksim"]["bios"];
    assert_eq!(bios["submitted"], bios["completed"], "{bios}");
    let rqs = v["blksim"]["block"]["requests_completed"].as_u64().unwrap();
    let runs = v["blksim"]["block"]["hw_queue_runs"].as_u64().unwrap();
    assert!(rqs > 600, "{rqs} requests");
    assert!(runs <= 2 * rqs, "{runs} queue runs for {rqs} requests");
    assert!(events <= 8 * rqs, "{events} events for {rqs} requests");
}

/// The longest thinktime fio can store (UINT_MAX µs) and the longest completion time a
/// null_blk accepts cost the same events as short ones: sample windows are skipped, not
/// stepped through.
#[test]
fn long_idle_times_cost_what_short_ones_cost() {
    let think = |t: &str| {
        let tt = format!("--thinktime={t}");
        json(&[
            "run",
            "--device=null_blk",
            "--name=t",
            "--rw=randread",
            "--number_ios=3",
            &tt,
        ])
    };
    let short = think("1s");
    let long = think("4294967295");
    assert_eq!(short["blksim"]["events"], long["blksim"]["events"]);
    assert_eq!(ios(&short), 3);
    assert_eq!(ios(&long), 3);
    // Three thinktimes of 4294.967295 s each: the run spans hours of virtual time.
    assert!(long["jobs"][0]["job_runtime"].as_u64().unwrap() > 12_000_000);
    let comp = |c: &str| {
        let s = format!("--set=completion_nsec={c}");
        json(&[
            "run",
            "--device=null_blk",
            "--set=irqmode=2",
            &s,
            "--name=c",
            "--rw=randread",
            "--number_ios=3",
        ])
    };
    assert_eq!(
        comp("10us")["blksim"]["events"],
        comp("3600s")["blksim"]["events"]
    );
}

#[test]
fn time_values_past_their_bounds_are_located_errors() {
    // fio stores thinktime in an unsigned int of microseconds.
    let o = run(&[
        "run",
        "--device=null_blk",
        "--name=t",
        "--rw=read",
        "--number_ios=3",
        "--thinktime=1000000000000s",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("<command line>:3: option 'thinktime'")
            && o.stderr.contains("at most 4294.967295 s"),
        "{}",
        o.stderr
    );
    let o = run(&["run", "--name=t", "--rw=read", "--runtime=2000000000"]);
    assert!(
        !o.ok && o.stderr.contains("option 'runtime'"),
        "{}",
        o.stderr
    );
    for (set, key) in [
        (
            "--set=completion_nsec=18446744073709551615",
            "completion_nsec",
        ),
        ("--set=card.t_prog_ns=61s", "card.t_prog_ns"),
        ("--set=host.wakeup_ns=1h", "host.wakeup_ns"),
        ("--set=platform.syscall_ns=2m", "platform.syscall_ns"),
        ("--set=queue.iosched.read_lat_nsec=2h", "read_lat_nsec"),
        // With an elevator the kernel refuses more than MAX_SCHED_RQ (2048) requests
        // (`queue_requests_store`).
        ("--set=queue.nr_requests=2049", "nr_requests"),
    ] {
        let dev = if set.contains("card.") || set.contains("host.") {
            "--device=emmc-hbg4a2"
        } else {
            "--device=null_blk"
        };
        let sched = "--set=queue.scheduler=kyber";
        let o = run(&[
            "run",
            dev,
            sched,
            set,
            "--name=t",
            "--rw=read",
            "--number_ios=1",
        ]);
        assert!(!o.ok, "{set} accepted");
        assert!(
            o.stderr.contains(set) && o.stderr.contains(key) && o.stderr.contains("out of range"),
            "{set}: {}",
            o.stderr
        );
    }
}

/// A run whose events would pass the end of the 64-bit nanosecond clock stops with an error
/// instead of wrapping: 1 MiB I/Os at 1 byte/s are 12 days apart, so a few thousand of them
/// span more than 146 years.
#[test]
fn virtual_time_cannot_wrap() {
    let o = run(&[
        "run",
        "--device=null_blk",
        "--name=r",
        "--rw=write",
        "--bs=1m",
        "--rate=1",
        "--number_ios=10000",
    ]);
    assert!(!o.ok);
    assert!(
        o.stderr.contains("end of blksim's virtual clock"),
        "{}",
        o.stderr
    );
}

/// One value syntax everywhere: `20us` and `20000` (ns) mean the same in a profile, on
/// `--set`, and in a job file (thinktime in µs by default).
#[test]
fn one_value_syntax_for_profiles_set_and_jobs() {
    let digest = |args: &[&str]| json(args)["blksim"]["event_digest"].clone();
    let base = [
        "run",
        "--device=null_blk",
        "--set=irqmode=2",
        "--name=a",
        "--rw=randread",
        "--number_ios=200",
        "--thinktime_blocks=10",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        digest(&a)
    };
    let a = with(&["--set=completion_nsec=20us", "--thinktime=20"]);
    let b = with(&["--set=completion_nsec=20000", "--thinktime=20us"]);
    let c = with(&["--set=completion_nsec=(10us*2)", "--thinktime=0.02ms"]);
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_ne!(a, with(&["--set=completion_nsec=21us", "--thinktime=20"]));
    // The same value in a profile file.
    let dir = std::env::temp_dir().join(format!("blksim-bounded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prof = dir.join("nb.toml");
    std::fs::write(
        &prof,
        "driver = \"null_blk\"\n[device]\nirqmode = 2\ncompletion_nsec = \"20us\"\nsize = 16384\n",
    )
    .unwrap();
    let dev = format!("--device={}", prof.display());
    let mut a2 = base.to_vec();
    a2[1] = &dev;
    a2.push("--thinktime=20");
    assert_eq!(digest(&a2), a);
    // And an error in the profile names its line.
    std::fs::write(
        &prof,
        "driver = \"null_blk\"\n[device]\nirqmode = 2\ncompletion_nsec = \"20 lightyears\"\n",
    )
    .unwrap();
    let o = run(&["run", &dev, "--name=a", "--rw=read", "--number_ios=1"]);
    assert!(!o.ok);
    assert!(
        o.stderr
            .contains(&format!("{}:4: completion_nsec", prof.display())),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Errors found after parsing point at the job file line of the option that caused them.
#[test]
fn semantic_errors_name_file_line_and_option() {
    let dir = std::env::temp_dir().join(format!("blksim-semantic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("j.fio");
    let cases: [(&str, &str); 6] = [
        (
            "[global]\nbs=4k\n\n[a]\nrw=read\nsize=1k\n",
            ":6: option 'size': size too small, must not be less than minimum block size: 1024 < 4096",
        ),
        (
            "[a]\nrw=read\nsize=1m\nioscheduler=cfq\n",
            ":4: option 'ioscheduler': unknown I/O scheduler 'cfq'",
        ),
        (
            "[a]\nrw=read\nioscheduler=bfq\n[b]\nrw=read\nioscheduler=kyber\n",
            ":6: option 'ioscheduler': this job asks for I/O scheduler 'kyber'",
        ),
        (
            "[a]\nrw=randread\noffset=1p\n",
            ":3: option 'offset': you need to specify valid offset=",
        ),
        (
            "[global]\nrandom_distribution=zipf:1\n[a]\nrw=randread\nsize=1m\n",
            ":2: option 'random_distribution': zipf theta",
        ),
        // A percentage of a null-engine file that nothing sizes: no made-up start offset.
        (
            "[a]\nioengine=null\nrw=write\nsize=100%\nfilesize=2m\noffset=50%\n",
            ":6: option 'offset': you need to specify valid offset= (a percentage offset of the null engine's file, which no byte size= sizes, starts past the filesize 2097152)",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&job, text).unwrap();
        let o = run(&["run", job.to_str().unwrap(), "--device=null_blk"]);
        assert!(!o.ok, "{text} ran");
        let expect = format!("{}{want}", job.display());
        assert!(
            o.stderr.contains(&expect),
            "want {expect}\ngot {}",
            o.stderr
        );
    }
    // A command-line option is named by its position among the fio options (from 0).
    let o = run(&[
        "run",
        "--device=null_blk",
        "--name=a",
        "--rw=read",
        "--bs=8k",
        "--size=4k",
    ]);
    assert!(
        o.stderr
            .contains("<command line>:3: option 'size': size too small"),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The peak memory of a replay of `n` fio v3 records streamed through a FIFO: the trace is
/// generated as it is read, so its length costs no disk. The writer reads the child's
/// `VmHWM` after the last record, before it closes the FIFO.
fn replay_peak_kib(n: u64) -> u64 {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("blksim-bounded-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("trace.iolog");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let child = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "--device=null_blk",
            "--name=r",
            "--ioengine=libaio",
            "--iodepth=16",
            "--replay_no_stall=1",
            "--output-format=json",
            &format!("--read_iolog={}", fifo.display()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut w =
        std::io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(&fifo).unwrap());
    writeln!(w, "fio version 3 iolog\n0 f add\n0 f open").unwrap();
    for i in 0..n {
        // Offsets over 1 GiB in a fixed stride: no two neighbours alike.
        writeln!(w, "{} f read {} 4096", i / 100, (i * 7919 % 262_144) * 4096).unwrap();
    }
    w.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|x| x.parse().ok())
        .unwrap();
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(n));
    let _ = std::fs::remove_dir_all(&dir);
    hwm
}

/// A trace is streamed: replaying 10^6 records takes the memory 10^4 take (within 2 MiB).
#[test]
fn replay_memory_does_not_grow_with_the_trace() {
    let small = replay_peak_kib(10_000);
    let big = replay_peak_kib(1_000_000);
    eprintln!("replay peak: {small} KiB at 10^4 records, {big} KiB at 10^6");
    assert!(
        big <= small + 2048,
        "peak {big} KiB for 10^6 records, {small} KiB for 10^4"
    );
}
