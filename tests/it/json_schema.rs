//! `docs/reference/pullcheck.schema.json` against real `pullcheck check -o json` output: runs
//! that end ok, not_found, unauthorized (counted and not), wrong_platform, wont_start and a
//! mixed run, each validated with Python's `jsonschema` (in `target/venv`, which
//! `scripts/test.sh` makes; the test fails, never skips, without it). The schema's word lists
//! are the code's own.

use crate::check::{Run, check, check_with_stdin};
use crate::common::{RunSettings, plain_registry, tls_basic_registry};
use pullcheck::{ExitCode, NotCounted, Reason, Status};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SCHEMA: &str = "docs/reference/pullcheck.schema.json";

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{SCHEMA}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{SCHEMA}: {e}"))
}

/// The Python that has `jsonschema`: the test venv's, else the one on the PATH.
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python3");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Validates every document against the schema (itself checked first); panics with the
/// validator's words on the first that does not conform.
fn validate(documents: &[(&str, Value)]) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![SCHEMA.to_string()];
    for (name, doc) in documents {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(doc).unwrap()).unwrap();
        args.push(path.display().to_string());
    }
    let script = "\
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit('no jsonschema in this Python: run scripts/test.sh (it makes target/venv), or target/venv/bin/pip install jsonschema')
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema)
bad = 0
for path in sys.argv[2:]:
    for e in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(f'{path}: {list(e.absolute_path)}: {e.message}')
sys.exit(1 if bad else 0)
";
    let out = Command::new(python())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-c")
        .arg(script)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", python().display()));
    assert!(
        out.status.success(),
        "{SCHEMA} rejects pullcheck's output:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON of a run, with its exit code checked.
fn json(run: &Run, code: i32) -> Value {
    assert_eq!(run.code, code, "{}\n{}", run.stdout, run.stderr);
    run.json()
}

fn words(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect()
}

#[test]
fn the_schemas_word_lists_are_the_codes() {
    let s = schema();
    let defs = &s["$defs"];
    let reasons: Vec<String> = Reason::ALL.iter().map(|r| r.to_string()).collect();
    assert_eq!(words(&defs["reason"]["enum"]), reasons);
    let statuses: Vec<String> = Status::ALL.iter().map(|s| s.as_str().to_string()).collect();
    assert_eq!(words(&defs["status"]["enum"]), statuses);
    assert_eq!(words(&defs["counts"]["required"]), statuses);
    let causes: Vec<String> = NotCounted::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    assert_eq!(words(&defs["not_counted"]["enum"]), causes);
    let codes: Vec<String> = ExitCode::ALL.iter().map(|c| c.code().to_string()).collect();
    assert_eq!(words(&s["properties"]["exit_code"]["enum"]), codes);
    // A container that will not start names one of the image reasons of `wont_start`.
    let container = words(&defs["container"]["properties"]["reason"]["enum"]);
    for r in Reason::ALL
        .iter()
        .filter(|r| r.status() == Status::WontStart)
    {
        assert!(container.contains(&r.to_string()), "{r}");
    }
}

#[test]
fn real_output_of_every_kind_of_run_matches_the_schema() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("schema/app", "v1");
    reg.push_oci_index("schema/arm", "v1", &["linux/arm64/v8"]);
    let ok = format!("{host}/schema/app:v1");
    let missing = format!("{host}/schema/app:v2");
    let no_repo = format!("{host}/schema/none:v1");
    let arm = format!("{host}/schema/arm:v1");
    let tls = tls_basic_registry();
    let tls_host = tls.host();
    let ca = tls.ca_pem_path().unwrap().to_str().unwrap().to_string();
    tls.push_oci_manifest("schema/private", "v1");
    let private = format!("{tls_host}/schema/private:v1");
    let plain = ["-o", "json", "--plain-http", host.as_str()];
    let with = |extra: &[&str]| -> Vec<String> {
        plain
            .iter()
            .chain(extra)
            .map(|s| (*s).to_string())
            .collect()
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        check(&refs)
    };

    let ok_run = json(&run(with(&[&ok])), 0);
    assert!(ok_run["images"][0].get("hint").is_none(), "{ok_run:#}");
    let not_found = json(&run(with(&[&missing, &no_repo])), 3);
    let unauthorized = json(&run(with(&["--ca-file", &ca, &private])), 5);
    let warned = json(
        &run(with(&[
            "--ca-file",
            &ca,
            "--allow-unauthenticated",
            &tls_host,
            &private,
        ])),
        0,
    );
    assert_eq!(warned["images"][0]["fatal"], false, "{warned:#}");
    let wrong_platform = json(&run(with(&["--platform", "linux/amd64", &arm])), 4);
    let mixed = json(
        &run(with(&[
            "--ca-file",
            &ca,
            "--platform",
            "linux/amd64",
            &private,
            &ok,
            "Not/A/Valid:Reference",
            &missing,
            &arm,
        ])),
        3,
    );
    // The images in the order given, and counted by status.
    let order: Vec<String> = mixed["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["image"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        order,
        [&private, &ok, "Not/A/Valid:Reference", &missing, &arm]
    );
    let counts = &mixed["counts"];
    for (status, n) in [
        ("ok", 1),
        ("not_found", 1),
        ("invalid_reference", 1),
        ("unauthorized", 1),
        ("wrong_platform", 1),
        ("denied", 0),
    ] {
        assert_eq!(counts[status], n, "{status}: {counts}");
    }
    // A container that will not start (the image runs as root) gives `containers`.
    reg.push_image_with_config(
        "schema/root",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    let root = format!("{host}/schema/root:v1");
    let containers = format!(
        r#"[{{"name":"app","image":"{root}","command":false,"args":false,"runAsNonRoot":true}}]"#
    );
    let mut cmd_args = with(&[]);
    cmd_args.extend(["--containers".to_string(), containers]);
    let refs: Vec<&str> = cmd_args.iter().map(String::as_str).collect();
    let wont_start = json(&check_with_stdin(&refs, ""), 7);
    assert!(
        wont_start["images"][0]["containers"].is_array(),
        "{wont_start:#}"
    );

    validate(&[
        ("ok", ok_run),
        ("not_found", not_found),
        ("unauthorized", unauthorized),
        ("not_counted", warned),
        ("wrong_platform", wrong_platform),
        ("mixed", mixed),
        ("wont_start", wont_start),
    ]);
}

#[test]
fn the_schema_rejects_what_it_should() {
    // A document with an empty hint, a missing `counts` and an unknown reason: the schema is
    // strict enough to see each.
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("schema/strict", "v1");
    let image = format!("{host}/schema/strict:v1");
    let good = json(&check(&["-o", "json", "--plain-http", &host, &image]), 0);
    let mut hint = good.clone();
    hint["images"][0]["hint"] = "".into();
    let mut counts = good.clone();
    counts.as_object_mut().unwrap().remove("counts");
    let mut reason = good.clone();
    reason["images"][0]["reason"] = "no_such_reason".into();
    for (name, doc) in [("hint", hint), ("counts", counts), ("reason", reason)] {
        let caught = std::panic::catch_unwind(|| validate(&[(name, doc)]));
        assert!(caught.is_err(), "{name}: accepted");
    }
}
