//! `pullcheck doctor` on the real cluster, each answer it gives checked against the state the
//! test made: no release there (every fix is the install), a release in `mode: both` that is
//! healthy with a namespace opted in (every check ok, exit 0), a namespace that is not opted in
//! (no, and the `kubectl label` that mends it), and the webhook scaled to 0 (the API server
//! cannot reach it: no, with why and what to do). `--probe` against the watch-mode release: a
//! watched namespace's Job is failed and said so with the time, the verdict and the words; in a
//! namespace the install does not act on, the probe says no at its bound; nothing is left.

use crate::harness::{cluster, minutes, wait_for};
use crate::webhook::{install, opted_in};
use std::process::Output;

/// `pullcheck doctor ARGS…` against the cluster's kubeconfig: exit code and stdout.
fn doctor(args: &[&str]) -> (i32, String) {
    let c = cluster();
    let out: Output = crate::common::pullcheck_cmd()
        .arg("doctor")
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(args)
        .output()
        .expect("run pullcheck doctor");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("pullcheck doctor {}:\n{stdout}{stderr}", args.join(" "));
    (out.status.code().expect("an exit code"), stdout)
}

/// The line of check `name`, and the fix under it when there is one.
fn line<'a>(out: &'a str, name: &str) -> (&'a str, Option<&'a str>) {
    let mut lines = out.lines();
    let found = lines
        .by_ref()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no line for check {name}:\n{out}"));
    let fix = lines
        .next()
        .and_then(|l| l.trim_start().strip_prefix("fix: "));
    (found, fix)
}

#[test]
fn doctor_says_how_to_install_a_chart_that_is_not_there() {
    let (code, out) = doctor(&[
        "--namespace",
        "pc-doctor-none",
        "--release",
        "pc-doctor-none",
    ]);
    assert_eq!(code, 1, "{out}");
    for check in ["installed", "configured"] {
        let (said, fix) = line(&out, check);
        assert!(said.starts_with("no "), "{said}");
        let fix = fix.expect("a fix");
        assert!(
            fix.contains("helm install pc-doctor-none charts/pullcheck -n pc-doctor-none"),
            "{fix}"
        );
    }
    let (code, json) = doctor(&[
        "-n",
        "pc-doctor-none",
        "--release",
        "pc-doctor-none",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).expect("doctor's JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["checks"][0]["check"], "installed");
    assert!(v["checks"][0]["fix"].as_str().is_some(), "{v:#}");
}

#[test]
fn doctor_says_ok_then_not_opted_in_then_unreachable_each_with_its_fix() {
    let c = cluster();
    let release = install("pc-doctor", "doctor", &[]);
    let ns = opted_in("pc-doctor-in", &release);
    let args = ["-n", "pc-doctor", "--release", "pc-doctor"];

    // Healthy, one namespace opted in: every check ok.
    let (code, out) = doctor(&args);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("every check is ok\n"), "{out}");
    let (said, _) = line(&out, "namespaces");
    assert!(said.ends_with("opted in: pc-doctor-in"), "{said}");
    let (said, _) = line(&out, "injected");
    assert!(said.contains("gets the pullcheck init container"), "{said}");
    line(&out, "elected");

    // A namespace without the label: no, and the label that opts it in, read from the
    // installed webhook's namespaceSelector.
    let out_ns = c.namespace("pc-doctor-out");
    let mut sample = args.to_vec();
    sample.extend(["--sample-namespace", &out_ns.name]);
    let (code, out) = doctor(&sample);
    assert_eq!(code, 1, "{out}");
    let (said, fix) = line(&out, "sample-namespace");
    assert!(said.starts_with("no "), "{said}");
    assert_eq!(
        fix,
        Some("opt it in: `kubectl label namespace pc-doctor-out pullcheck.dev/inject=doctor`")
    );
    let (said, _) = line(&out, "injected");
    assert!(said.starts_with("no "), "{said}");

    // The webhook scaled to 0: failurePolicy Ignore admits the sample unchanged; doctor says
    // the API server did not reach it and why.
    c.kubectl(&[
        "-n",
        "pc-doctor",
        "scale",
        "deployment/pc-doctor-pullcheck",
        "--replicas=0",
    ]);
    let out = wait_for("doctor to see the webhook gone", minutes(2), || {
        let (code, out) = doctor(&args);
        // Both at once: the Deployment's status and the EndpointSlice catch up one by one.
        let gone =
            line(&out, "ready").0.contains("0 of 0") && line(&out, "reached").0.starts_with("no ");
        if code == 1 && gone { Ok(out) } else { Err(out) }
    });
    let (said, fix) = line(&out, "ready");
    assert!(said.contains("0 of 0 replicas ready"), "{said}");
    assert!(
        fix.expect("a fix")
            .contains("scale deployment/pc-doctor-pullcheck"),
        "{out}"
    );
    let (said, fix) = line(&out, "reached");
    assert!(said.contains("no ready endpoints"), "{said}");
    assert!(said.contains("failurePolicy Ignore"), "{said}");
    assert!(fix.expect("a fix").contains("endpointslices"), "{out}");
    let (said, _) = line(&out, "injected");
    assert!(said.starts_with("no "), "{said}");
    drop(ns);
}

#[test]
fn doctor_probe_proves_the_install_and_says_no_where_it_does_not_act() {
    let c = cluster();
    let ns = crate::watch_mode::watched("pc-doctor-probe");
    let release = ["-n", "pc-watch-mode", "--release", "pc-watch-mode"];
    let mut args = release.to_vec();
    args.extend(["--probe", &ns.name]);
    let (_, out) = doctor(&args);
    let (said, fix) = line(&out, "probe");
    assert!(
        said.starts_with("ok "),
        "{out}{}",
        c.pullcheck_said(&ns.name)
    );
    assert!(said.contains("failed in"), "{said}");
    assert!(said.contains("verdict manifest_missing"), "{said}");
    assert!(said.contains("pullcheck-probe-"), "{said}");
    assert_eq!(fix, None);
    let seconds: f64 = said
        .split("failed in ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("the time");
    println!(
        "doctor --probe: the install failed its Job in {seconds:.1} s on {}",
        c.runtime
    );

    // A namespace the install does not act on: no, at the bound, with the kubelet's words.
    let unwatched = c.namespace("pc-doctor-probe-off");
    let mut args = release.to_vec();
    args.extend(["--probe", &unwatched.name, "--probe-timeout", "20s"]);
    let (code, out) = doctor(&args);
    assert_eq!(code, 1, "{out}");
    let (said, fix) = line(&out, "probe");
    assert!(said.starts_with("no "), "{said}");
    assert!(said.contains("not failed within 20s"), "{said}");
    assert!(fix.is_some(), "{out}");

    // Nothing of the probes is left.
    for namespace in [&ns.name, &unwatched.name] {
        wait_for("the probe's Jobs to go", minutes(1), || {
            let jobs = c.kubectl(&["-n", namespace, "get", "jobs", "-o", "name"]);
            if jobs.trim().is_empty() {
                Ok(())
            } else {
                Err(jobs)
            }
        });
    }
}
