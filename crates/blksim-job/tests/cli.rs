//! The fio-style command line and blksim's overrides.

use blksim_job::*;

fn args(s: &[&str]) -> Vec<String> {
    s.iter().map(|a| a.to_string()).collect()
}

#[test]
fn each_name_starts_a_job_and_earlier_options_are_global() {
    let set = parse_cli(&args(&[
        "--rw=randread",
        "--size=128m",
        "--name=job1",
        "--bs=8k",
        "--name=job2",
        "--iodepth",
        "4",
    ]))
    .unwrap();
    assert_eq!(set.jobs.len(), 2);
    let (a, b) = (&set.jobs[0], &set.jobs[1]);
    assert_eq!(
        (a.name.as_str(), a.rw, a.bs[0].min),
        ("job1", RwPattern::RandRead, 8192)
    );
    assert_eq!(
        (b.name.as_str(), b.rw, b.bs[0].min, b.iodepth),
        ("job2", RwPattern::RandRead, 4096, 4)
    );
    assert_eq!(a.size, Some(SizeOrPct::Bytes(128 << 20)));
    assert_eq!(
        set.global_options,
        vec![
            ("rw".into(), "randread".into()),
            ("size".into(), "128m".into())
        ]
    );
    assert_eq!(a.raw_options[0], ("name".to_string(), "job1".to_string()));
    assert_eq!(a.origin, COMMAND_LINE);
}

#[test]
fn name_global_makes_a_global_section_and_order_matters() {
    let set = parse_cli(&args(&[
        "--name=global",
        "--bs=16k",
        "--name=a",
        "--name=global",
        "--bs=64k",
        "--time_based",
        "--name=b",
    ]))
    .unwrap();
    assert_eq!(set.jobs[0].bs[0].min, 16384);
    assert_eq!(set.jobs[1].bs[0].min, 65536);
    assert!(!set.jobs[0].time_based_asked && set.jobs[1].time_based_asked);
}

#[test]
fn same_result_as_a_job_file() {
    let cli = parse_cli(&args(&[
        "--name=global",
        "--bs=4k",
        "--ioengine=libaio",
        "--name=x",
        "--rw=randwrite",
        "--iodepth=8",
    ]))
    .unwrap();
    let file = parse_job_str(
        "[global]\nbs=4k\nioengine=libaio\n[x]\nrw=randwrite\niodepth=8\n",
        "j.fio",
        &|_| None,
    )
    .unwrap();
    let mut c = cli.jobs[0].clone();
    let mut f = file.jobs[0].clone();
    // Provenance: where each option was set, inherited from the global section or not.
    assert_eq!(f.where_set("iodepth"), Some(("j.fio", 6)));
    assert_eq!(f.where_set("bs"), Some(("j.fio", 2)));
    assert_eq!(c.where_set("iodepth"), Some(("<command line>", 5)));
    assert_eq!(c.where_set("bs"), Some(("<command line>", 1)));
    assert_eq!(f.where_set("size"), None);
    // Only the provenance differs (and fio lists --name among a command-line job's options).
    c.origin.clear();
    f.origin.clear();
    c.set_at.clear();
    f.set_at.clear();
    c.raw_options.retain(|(k, _)| k != "name");
    assert_eq!(c, f);
}

#[test]
fn errors_name_the_argument_index() {
    let e = parse_cli(&args(&["--name=a", "--bs=4q"])).unwrap_err();
    assert_eq!(e.to_string(), "<command line>:1: option 'bs': invalid size '4q' (expected a number with an optional k/m/g/t/p suffix)");
    let e = parse_cli(&args(&["--name=a", "--rw=read", "--iodepht=4"])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "<command line>:2: unknown option 'iodepht' (did you mean 'iodepth'?)"
    );
    let e = parse_cli(&args(&["--name=a", "job.fio"])).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (COMMAND_LINE, 1));
    let e = parse_cli(&args(&["--name="])).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("name"));
    let e = parse_cli(&args(&["--bs=4k"])).unwrap_err();
    assert!(e.message.contains("no jobs"), "{e}");
}

#[test]
fn split_keeps_blksim_options_apart() {
    let a = args(&[
        "blksim",
        "run",
        "job.fio",
        "--device",
        "emmc",
        "--runtime=1",
        "--seed=7",
        "--bs",
        "8k",
        "--time_based",
        "--output-format=json",
        "--cmdhelp=bs",
        "--",
        "--rw=read",
    ]);
    let (fio, other) = split_cli_options(&a);
    let keys: Vec<(usize, &str, Option<&str>)> = fio
        .iter()
        .map(|o| (o.index, o.key.as_str(), o.value.as_deref()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (5, "runtime", Some("1")),
            (7, "bs", Some("8k")),
            (9, "time_based", None)
        ]
    );
    let rest: Vec<&str> = other.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        rest,
        [
            "blksim",
            "run",
            "job.fio",
            "--device",
            "emmc",
            "--seed=7",
            "--output-format=json",
            "--cmdhelp=bs",
            "--",
            "--rw=read"
        ]
    );
    assert_eq!(other[3].0, 3);
}

#[test]
fn overrides_apply_to_every_job_and_win() {
    let mut set = parse_job_str(
        "[global]\nruntime=60\nioengine=libaio\n[a]\niodepth=32\n[b]\nruntime=10\nbs=8k\n",
        "job.fio",
        &|_| None,
    )
    .unwrap();
    let (fio, _) = split_cli_options(&args(&["--runtime=1", "--iodepth=2", "--direct"]));
    apply_overrides(&mut set, &fio).unwrap();
    for j in &set.jobs {
        assert_eq!(
            (j.runtime_ns, j.iodepth, j.direct),
            (1_000_000_000, 2, true)
        );
    }
    assert_eq!(
        set.jobs[0].raw_options,
        vec![
            ("iodepth".into(), "2".into()),
            ("runtime".into(), "1".into())
        ]
    );
    assert_eq!(
        set.jobs[1].raw_options[0],
        ("runtime".to_string(), "1".to_string())
    );

    // Switching to a sync engine by override updates the depth note.
    apply_override_pairs(&mut set, &[("ioengine".into(), "psync".into())]).unwrap();
    assert!(set.jobs[0].notes.iter().any(|n| n.contains("capped at 1")));
    apply_override_pairs(&mut set, &[("iodepth".into(), "1".into())]).unwrap();
    assert!(!set.jobs[0].notes.iter().any(|n| n.contains("capped at 1")));

    let e = apply_override_pairs(
        &mut set,
        &[("bs".into(), "4k".into()), ("iodepht".into(), "1".into())],
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), (COMMAND_LINE, 2));
    let e = apply_override_pairs(&mut set, &[("name".into(), "x".into())]).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("name"));
}
