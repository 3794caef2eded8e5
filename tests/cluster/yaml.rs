//! pullcheck's YAML reader against kubectl's: every fixture of `tests/fixtures/manifests/`, every
//! `examples/*.yaml` and a corpus of YAML's scalar styles generated here, each read by the real
//! kubectl v1.34.4 (go-yaml through `sigs.k8s.io/yaml`, the reader that decides what a manifest
//! is) and by pullcheck, and what each read compared document by document.
//!
//! Needs neither the cluster nor root: only the `kube` binary of `tests/cluster/build.sh`.
//! kubectl reads without a server as `kubectl annotate --local -o json -f FILE KEY-` (removing an
//! annotation no object has: the objects come back as read, with an empty `annotations`);
//! when a file is refused, each of its documents (split as kubectl's own `YAMLReader` splits
//! them, at `---` lines) is read alone, to know which one.
//!
//! For every input:
//! - kubectl reads every document ⇒ pullcheck reads the input, every document's value is
//!   kubectl's (all of it, not only the pod specs), the reader finds the same pod specs with the
//!   same containers (names, images, pull policies, the start check's facts) in both readings,
//!   `pullcheck check --pod-spec FILE -o json` lists kubectl's images, and `pullcheck inject`
//!   accepts it, keeps every input byte (in order) and adds only its own container and volumes
//!   as kubectl reads the output;
//! - kubectl refuses a document ⇒ pullcheck refuses the input (exit 2), or reads it and says on
//!   stderr, naming the document, that kubectl cannot read it (docs/reading-yaml.md's choice);
//! - kubectl reads other values (a document after `...` left out, a YAML 1.1 line break) ⇒
//!   pullcheck says so on stderr, naming the document.
//!
//! Every difference is printed as a table row; the test fails on any but the allowed one.

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const IMAGE: &str = "registry.example.com/pullcheck:0.1.0";

/// The multi-call Kubernetes binary, from `tests/cluster/build.sh` (cached: seconds).
fn kube() -> &'static Path {
    static KUBE: OnceLock<PathBuf> = OnceLock::new();
    KUBE.get_or_init(|| crate::harness::built_by("build.sh", "kube"))
}

/// kubectl's reading of one file: its objects (a `List` is its items, as kubectl flattens it),
/// or kubectl's error.
fn kubectl_objects(path: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new(kube())
        .args(["kubectl", "annotate", "--local", "-o", "json", "-f"])
        .arg(path)
        .arg("pullcheck-yaml-oracle-")
        .env("KUBECONFIG", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl");
    // Objects printed before a refused document are kept: kubectl prints as it reads.
    let mut objects = Vec::new();
    for value in serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>() {
        objects.push(normalize(value.expect("kubectl prints JSON")));
    }
    if out.status.success() {
        Ok(objects)
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let path = path.display().to_string();
        Err(stderr.trim().replace(&path, "FILE"))
    }
}

/// The value without what `annotate` adds (an empty `metadata.annotations`).
fn normalize(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.get("annotations") == Some(&Value::Object(Default::default())) {
            meta.remove("annotations");
        }
        if meta.is_empty()
            && let Some(o) = v.as_object_mut()
        {
            o.remove("metadata");
        }
    }
    v
}

/// The documents of a YAML stream as kubectl's `YAMLReader` splits it: at lines that start
/// with `---` (only white space or a comment may follow), empty chunks dropped. Each chunk
/// with the 1-based line it starts on.
fn kubectl_chunks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut chunk = String::new();
    let mut start = 1;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.starts_with("---") {
            if !chunk.is_empty() {
                out.push((start, std::mem::take(&mut chunk)));
            }
            start = i + 2;
            continue;
        }
        chunk.push_str(line);
    }
    if !chunk.is_empty() {
        out.push((start, chunk));
    }
    out
}

/// What kubectl read: every object, or the first refused chunk (its line and kubectl's error)
/// and the objects of every chunk it reads.
struct KubectlRead {
    objects: Vec<Value>,
    refused: Vec<(usize, String)>,
}

fn kubectl_read(text: &str, dir: &Path, name: &str) -> KubectlRead {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    match kubectl_objects(&path) {
        Ok(objects) => KubectlRead {
            objects,
            refused: Vec::new(),
        },
        Err(e) if text.trim_start().starts_with('{') => KubectlRead {
            objects: Vec::new(),
            refused: vec![(1, e)],
        },
        Err(whole) => {
            let mut read = KubectlRead {
                objects: Vec::new(),
                refused: Vec::new(),
            };
            for (n, (line, chunk)) in kubectl_chunks(text).into_iter().enumerate() {
                let path = dir.join(format!("{name}.{n}"));
                std::fs::write(&path, &chunk).unwrap();
                match kubectl_objects(&path) {
                    Ok(objects) => read.objects.extend(objects),
                    Err(e) => read.refused.push((line, e)),
                }
            }
            if read.refused.is_empty() {
                // The splitter itself refused (`--- text`), or a chunk read alone differs.
                read.refused.push((1, whole));
            }
            read
        }
    }
}

/// pullcheck's documents as objects, `List`s flattened and empty documents dropped (as kubectl
/// does).
fn flatten(docs: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for d in docs {
        if d.is_null() {
            continue;
        }
        let is_list =
            d["kind"].as_str().is_some_and(|k| k.ends_with("List")) && d["items"].is_array();
        if is_list {
            out.extend(
                d["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .cloned()
                    .map(normalize),
            );
        } else {
            out.push(normalize(d));
        }
    }
    out
}

/// What the reader finds in pod specs, without the document numbers and list positions that
/// flattening changes: (kind, name, path, containers as debug text).
fn pod_specs(m: &pullcheck::manifests::Manifests) -> Vec<String> {
    m.pod_specs
        .iter()
        .map(|s| {
            let path = match s.origin.path.split_once("].") {
                Some((head, rest)) if head.starts_with("items[") || head.starts_with('[') => rest,
                _ => &s.origin.path,
            };
            format!(
                "{} {}/{} {path}: {:?}",
                s.origin.api_version, s.origin.kind, s.origin.name, s.containers
            )
        })
        .collect()
}

fn pullcheck(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pullcheck"));
    cmd.args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PULLCHECK_") {
            cmd.env_remove(k);
        }
    }
    // Every registry request goes to a closed port on loopback: nothing leaves the machine.
    for k in [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "https_proxy",
        "http_proxy",
    ] {
        cmd.env(k, "http://127.0.0.1:9");
    }
    for k in ["NO_PROXY", "no_proxy", "all_proxy"] {
        cmd.env_remove(k);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run pullcheck");
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The input's bytes, in order, in the output (inject only inserts).
fn is_subsequence(input: &[u8], output: &[u8]) -> bool {
    let mut rest = output.iter();
    input.iter().all(|b| rest.any(|o| o == b))
}

/// One input through both readers: `None` when they agree, else the table row of the
/// difference and whether it is the allowed one.
fn compare(label: &str, text: &str, dir: &Path, n: usize) -> Option<(String, bool)> {
    let name = format!("{n}.yaml");
    let path = dir.join(&name);
    let k = kubectl_read(text, dir, &name);
    let ours = pullcheck::manifests::read(text, "FILE");
    let short = |s: &str| s.chars().take(160).collect::<String>().replace('\n', " ");
    if !k.refused.is_empty() {
        let refused = k
            .refused
            .iter()
            .map(|(line, e)| format!("refuses the document at line {line}: {}", short(e)))
            .collect::<Vec<_>>()
            .join("; ");
        let Ok(m) = ours else {
            return None;
        };
        // pullcheck reads what kubectl refuses: allowed when check and inject both say so.
        let (_, _, check_err) = pullcheck(
            &[
                "check",
                "--pod-spec",
                "-",
                "-o",
                "json",
                "--timeout",
                "200ms",
                "--cloud-credentials",
                "off",
            ],
            text.as_bytes(),
        );
        let (code, _, inject_err) = pullcheck(&["inject", "--image", IMAGE], text.as_bytes());
        let warned = |e: &str| {
            e.lines()
                .any(|l| l.contains("kubectl") && l.contains("document"))
        };
        let said = warned(&check_err) && warned(&inject_err) && code == 0;
        return Some((
            format!(
                "| {label} | {refused} | reads {} documents{} |",
                m.documents().len(),
                if said {
                    ", says kubectl cannot"
                } else {
                    ", SAYS NOTHING"
                }
            ),
            said,
        ));
    }
    let m = match ours {
        Ok(m) => m,
        Err(e) => {
            return Some((
                format!(
                    "| {label} | reads {} objects | refuses: {} |",
                    k.objects.len(),
                    short(&e.to_string())
                ),
                false,
            ));
        }
    };
    let mut diffs = Vec::new();
    let ours_objects = flatten(m.documents());
    if ours_objects != k.objects {
        let first = ours_objects
            .iter()
            .zip(&k.objects)
            .position(|(a, b)| a != b)
            .unwrap_or(ours_objects.len().min(k.objects.len()));
        diffs.push(format!(
            "values differ at object {}: kubectl {} / pullcheck {}",
            first + 1,
            short(
                &k.objects
                    .get(first)
                    .map(Value::to_string)
                    .unwrap_or_default()
            ),
            short(
                &ours_objects
                    .get(first)
                    .map(Value::to_string)
                    .unwrap_or_default()
            )
        ));
    }
    // The pod specs of kubectl's reading (as JSON, which both read alike) against ours.
    let as_json: String = k.objects.iter().map(|o| format!("{o}\n")).collect();
    let theirs = if as_json.is_empty() {
        Vec::new()
    } else {
        pod_specs(&pullcheck::manifests::read(&as_json, "FILE").expect("kubectl's JSON reads"))
    };
    let mine = pod_specs(&m);
    if mine != theirs {
        diffs.push(format!(
            "pod specs differ: kubectl {theirs:?} / pullcheck {mine:?}"
        ));
    }
    // check --pod-spec lists kubectl's images (those it pulls: not `Never`).
    let want: BTreeSet<String> = if as_json.is_empty() {
        BTreeSet::new()
    } else {
        pullcheck::manifests::read(&as_json, "FILE")
            .unwrap()
            .images()
            .into_iter()
            .map(|i| i.image)
            .collect()
    };
    if !want.is_empty() {
        let (_, out, err) = pullcheck(
            &[
                "check",
                "--pod-spec",
                path.to_str().unwrap(),
                "-o",
                "json",
                "--timeout",
                "200ms",
                "--cloud-credentials",
                "off",
            ],
            b"",
        );
        let got: BTreeSet<String> = serde_json::from_slice::<Value>(&out)
            .ok()
            .and_then(|r| {
                r["images"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|i| i["image"].as_str().map(String::from))
                        .collect()
                })
            })
            .unwrap_or_default();
        if got != want {
            diffs.push(format!(
                "check lists {got:?}, kubectl reads {want:?} ({})",
                short(&err)
            ));
        }
    }
    // inject accepts it, keeps every byte, adds only its own.
    let (code, out, err) = pullcheck(&["inject", "--image", IMAGE], text.as_bytes());
    if code != 0 {
        diffs.push(format!("inject exit {code}: {}", short(&err)));
    } else if !is_subsequence(text.as_bytes(), &out) {
        diffs.push("inject changed the input outside its edits".to_string());
    } else {
        let out = String::from_utf8(out).unwrap();
        let again = kubectl_read(&out, dir, &format!("{n}.out.yaml"));
        let before: Vec<Value> = k
            .objects
            .iter()
            .map(crate::common::strip_pullcheck)
            .collect();
        let after: Vec<Value> = again
            .objects
            .iter()
            .map(crate::common::strip_pullcheck)
            .collect();
        if !again.refused.is_empty() || before != after {
            diffs.push(format!(
                "kubectl reads inject's output otherwise: {:?}",
                again.refused.first().map(|(_, e)| short(e))
            ));
        }
    }
    if diffs.is_empty() {
        return None;
    }
    // Values that differ are allowed only where pullcheck says, naming the document, that
    // kubectl reads it otherwise (a document after `...`, a YAML 1.1 line break).
    let said = m.notes.iter().any(|n| n.contains("kubectl cannot read it"));
    Some((
        format!(
            "| {label} | reads {} objects | {}{} |",
            k.objects.len(),
            diffs.join("; "),
            if said {
                "; says kubectl reads it otherwise"
            } else {
                ""
            }
        ),
        said,
    ))
}

/// Every fixture and example, by name, with its text.
fn files() -> Vec<(String, String)> {
    let root = crate::harness::repo();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.extend(
        std::fs::read_dir(root.join("examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml")),
    );
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let label = p.strip_prefix(&root).unwrap().display().to_string();
            (label, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// A Pod whose first container is written `container` (the lines after `- `, at indent 4).
fn pod(container: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - {}\n",
        container.trim_end_matches('\n')
    )
}

/// The generated corpus: (label, text).
fn corpus() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |label: &str, text: String| out.push((label.to_string(), text));

    // The image written in every scalar style (the value is what the comparison checks).
    let images: &[(&str, &str)] = &[
        ("plain", "reg.example/a:1"),
        ("plain, # inside", "reg.example/a:1#x"),
        ("plain, comment after", "reg.example/a:1 # the app"),
        ("plain, tab then comment", "reg.example/a:1\t# the app"),
        ("single-quoted", "'reg.example/a:1'"),
        ("single-quoted, '' inside", "'reg.example/it''s:1'"),
        ("double-quoted", "\"reg.example/a:1\""),
        (
            "double-quoted, escapes",
            "\"reg.example/\\x61\\u0062:\\x31\"",
        ),
        ("double-quoted, \\/ escape", "\"reg.example\\/a:1\""),
        (
            "double-quoted, \\t \\N \\_ \\L \\P \\e",
            "\"a\\tb\\Nc\\_d\\Le\\Pf\\eg\"",
        ),
        ("double-quoted, comment after", "\"reg.example/a:1\" # c"),
        ("tagged !!str", "!!str reg.example/a:1"),
        ("tagged !!str number", "!!str 1.5"),
        ("anchored", "&img reg.example/a:1"),
        ("plain multi-line", "reg.example/a\n      :1"),
        ("plain multi-line, blank line", "reg.example/a\n\n      :1"),
        ("plain multi-line at key column", "reg.example/a\n    :1"),
        ("single multi-line", "'reg.example/a\n      :1'"),
        (
            "single multi-line, blank line",
            "'reg.example/a\n\n      :1'",
        ),
        ("single multi-line at column 0", "'reg.example/a\n:1'"),
        ("double multi-line", "\"reg.example/a\n      :1\""),
        (
            "double multi-line, escaped break",
            "\"reg.example/\\\n      a:1\"",
        ),
        (
            "double multi-line, escaped break, spaces kept",
            "\"reg.example/ \\\n      \\ a:1\"",
        ),
        (
            "double multi-line at key column",
            "\"reg.example/a\n    :1\"",
        ),
        (
            "double multi-line below key column",
            "\"reg.example/a\n  :1\"",
        ),
        ("double multi-line at column 0", "\"reg.example/a\n:1\""),
        (
            "double multi-line, trailing spaces",
            "\"reg.example/a   \n      :1\"",
        ),
        (
            "double multi-line, tab indentation",
            "\"reg.example/a\n\t:1\"",
        ),
        (
            "double multi-line, tabs then text",
            "\"reg.example/a\n    \t  :1\"",
        ),
        ("literal block", "|\n      reg.example/a:1"),
        ("literal block, strip", "|-\n      reg.example/a:1"),
        ("literal block, keep", "|+\n      reg.example/a:1\n\n"),
        (
            "literal block, indentation indicator",
            "|2\n        reg.example/a:1",
        ),
        (
            "literal block, indicator and strip",
            "|2-\n        reg.example/a:1",
        ),
        (
            "literal block, strip and indicator",
            "|-2\n        reg.example/a:1",
        ),
        (
            "literal block, comment after indicator",
            "|- # the image\n      reg.example/a:1",
        ),
        (
            "literal block, leading blank lines",
            "|-\n\n      reg.example/a:1",
        ),
        (
            "literal block, more-indented leading line",
            "|-\n        x\n      reg.example/a:1",
        ),
        (
            "literal block, tab in content",
            "|-\n      reg.example/a:1\tx",
        ),
        ("folded block", ">\n      reg.example/a\n      :1"),
        ("folded block, strip", ">-\n      reg.example/a\n      :1"),
        ("folded block, keep", ">+\n      reg.example/a\n\n"),
        (
            "folded block, more-indented line",
            ">-\n      a\n        b\n      c",
        ),
        ("folded block, blank lines", ">-\n      a\n\n\n      b"),
        ("folded block, indicator", ">1-\n       a\n       b"),
        ("value on the next line", "\n      reg.example/a:1"),
        (
            "value after a comment line",
            "# the image\n      reg.example/a:1",
        ),
        ("empty", ""),
        ("null", "~"),
    ];
    for (label, image) in images {
        add(
            &format!("image {label}"),
            pod(&format!("name: c\n    image: {image}\n")),
        );
    }

    // Flow collections, comments, tabs, keys.
    for (label, container) in [
        ("flow mapping", "{name: c, image: reg.example/a:1}"),
        (
            "flow mapping over lines",
            "{name: c,\n    image: reg.example/a:1}",
        ),
        (
            "flow mapping, closing on its own line",
            "{name: c,\n    image: reg.example/a:1\n    }",
        ),
        (
            "flow mapping, trailing comma",
            "{name: c, image: reg.example/a:1, }",
        ),
        (
            "flow mapping, JSON-like adjacent value",
            "{\"name\":c, \"image\":\"reg.example/a:1\"}",
        ),
        (
            "flow mapping, comment inside",
            "{name: c, # the name\n    image: reg.example/a:1}",
        ),
        (
            "flow mapping, tab separation",
            "{name:\tc,\timage: reg.example/a:1}",
        ),
        (
            "flow mapping, plain multi-line value",
            "{name: c, image: reg.example/a\n    :1}",
        ),
        (
            "flow mapping, quoted multi-line below first line",
            "{name: c, image: \"reg.example/a\n     :1\"}",
        ),
        (
            "explicit keys",
            "? name\n    : c\n    ? image\n    : reg.example/a:1",
        ),
        ("quoted keys", "\"name\": c\n    'image': reg.example/a:1"),
        ("tab after colon", "name:\tc\n    image:\treg.example/a:1"),
        (
            "tab after dash",
            "name: c\n    image: reg.example/a:1\n  -\tname: d\n    image: reg.example/d:1",
        ),
        (
            "comment lines between keys, column 0",
            "name: c\n# a comment\n    image: reg.example/a:1",
        ),
        (
            "comment line, tab indented",
            "name: c\n\t# a comment\n    image: reg.example/a:1",
        ),
        (
            "blank line with a tab",
            "name: c\n\t\n    image: reg.example/a:1",
        ),
        (
            "trailing tab after value",
            "name: c\t\n    image: reg.example/a:1\t",
        ),
        (
            "pull policy quoted",
            "name: c\n    image: reg.example/a:1\n    imagePullPolicy: \"Never\"",
        ),
        (
            "pull policy multi-line double",
            "name: c\n    image: reg.example/a:1\n    imagePullPolicy: \"If\\\n      NotPresent\"",
        ),
        (
            "name as a literal block",
            "name: |-\n      c\n    image: reg.example/a:1",
        ),
        (
            "merge key",
            "&base {name: c, image: reg.example/a:1}\n  - <<: *base\n    name: d",
        ),
        (
            "merge key, list",
            "&base {name: c, image: reg.example/a:1}\n  - <<: [*base]\n    name: d",
        ),
        (
            "key longer than 1024 characters",
            &format!(
                "name: c\n    image: reg.example/a:1\n    env: [{{name: A, value: x}}]\n    {}: 1",
                "k".repeat(1030)
            ),
        ),
        (
            "LS inside a plain scalar",
            "name: c\n    image: reg.example/a:1\n    args: [a\u{2028}b]",
        ),
        (
            "NEL inside a double-quoted scalar",
            "name: c\n    image: \"reg.example/a\u{85}b:1\"",
        ),
        (
            "non-ASCII values",
            "name: ç\n    image: reg.example/é:1\n    args: [\"ü\", 'ß', ✓]",
        ),
    ] {
        add(label, pod(container));
    }

    // The issue's case: a multi-line double-quoted scalar inside a flow sequence, continuation
    // lines indented less than the first line but more than the parent key.
    let args = |cont: usize| {
        pod(&format!(
            "name: c\n    image: reg.example/a:1\n    args: [\"--config\", \"{{\\\"a\\\": 1,\n{}\\\"b\\\": 2}}\"]",
            " ".repeat(cont)
        ))
    };
    for cont in [0, 2, 4, 5, 6, 8, 20, 40] {
        add(
            &format!("args: flow sequence, double-quoted continuation at column {cont}"),
            args(cont),
        );
    }
    for (label, body) in [
        (
            "command: flow sequence over lines, single-quoted continuation",
            "command: ['sh', '-c', 'echo one;\n      echo two']",
        ),
        (
            "command: flow sequence, each item on its line, ] at key column",
            "command: [\n      \"sh\",\n      \"-c\"\n    ]",
        ),
        (
            "command: flow sequence, ] at column 0",
            "command: [\n      \"sh\",\n      \"-c\"\n]",
        ),
        (
            "command: flow sequence, item below the key column",
            "command: [\"sh\",\n  \"-c\"]",
        ),
        (
            "command: flow sequence, plain item below the key column",
            "command: [sh,\n  -c]",
        ),
        (
            "command: flow sequence, comments inside",
            "command: [sh, # the shell\n      -c, # a command\n      true]",
        ),
        (
            "command: flow sequence, trailing comma",
            "command: [sh, -c, ]",
        ),
        (
            "command: flow sequence, single-pair mapping",
            "command: [a: b]",
        ),
        (
            "command: double-quoted in block sequence, continuation below the dash",
            "command:\n    - \"sh -c\n  true\"",
        ),
        (
            "command: block sequence of literal blocks",
            "command:\n    - |\n      sh\n    - >-\n      -c\n      true",
        ),
    ] {
        add(
            label,
            pod(&format!("name: c\n    image: reg.example/a:1\n    {body}")),
        );
    }

    // Document markers, directives, BOM, line ends.
    let p = pod("{name: c, image: reg.example/a:1}");
    let q = pod("{name: d, image: reg.example/b:1}");
    for (label, text) in [
        ("--- first", format!("---\n{p}")),
        ("--- with a comment", format!("--- # first\n{p}--- # second\n{q}")),
        ("--- with trailing spaces", format!("---   \n{p}---\t\n{q}")),
        ("... then ---", format!("{p}...\n---\n{q}")),
        ("... then a document without ---", format!("{p}...\n{q}")),
        ("... at the end", format!("{p}...\n")),
        ("empty documents", format!("---\n---\n{p}---\n# only a comment\n---\n{q}---\n")),
        ("%YAML directive", format!("%YAML 1.1\n---\n{p}")),
        ("%YAML 1.2 directive in the second document", format!("{p}---\n%YAML 1.2\n---\n{q}")),
        ("%TAG directive", format!("%TAG !e! tag:example.com,2000:\n---\n{p}")),
        ("--- then a value on the same line", format!("--- !!map\n{p}")),
        ("---word line inside a block scalar", pod("name: c\n    image: reg.example/a:1\n    args:\n    - |\n---word\n")),
        ("BOM", format!("\u{feff}{p}")),
        ("BOM then ---", format!("\u{feff}---\n{p}---\n{q}")),
        ("BOM in the second document", format!("{p}---\n\u{feff}{q}")),
        ("CRLF", format!("{p}---\n{q}").replace('\n', "\r\n")),
        (
            "CRLF with block scalars and multi-line quoted scalars",
            pod("name: c\n    image: \"reg.example/a\n      :1\"\n    args:\n    - |\n      one\n      two\n    - >-\n      three\n      four").replace('\n', "\r\n"),
        ),
        ("no final newline", p.trim_end().to_string()),
        ("no final newline after a block scalar", pod("name: c\n    image: |-\n      reg.example/a:1").trim_end().to_string()),
        ("lone CR line ends", p.replace('\n', "\r")),
        ("JSON after ---", "---\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"j\"},\n \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"reg.example/j:1\"}]}}\n".to_string()),
        ("a List of Pods", format!("apiVersion: v1\nkind: List\nitems:\n- {}\n", p.trim_end().replace('\n', "\n  "))),
    ] {
        add(label, text);
    }

    // Aliases: a few are fine; go-yaml refuses "excessive aliasing".
    let mut laughs = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata:\n  a: &a [x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 0..9 {
        let prev = if i == 0 {
            "a".to_string()
        } else {
            format!("l{}", i - 1)
        };
        laughs.push_str(&format!("  l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    add(
        "excessive aliasing (billion laughs)",
        format!("{laughs}---\n{p}"),
    );
    out
}

/// Runs every input through both readers on `threads` threads; the table rows, sorted.
fn run(inputs: Vec<(String, String)>) -> Vec<(String, bool)> {
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<(usize, (String, String))> = inputs.into_iter().enumerate().collect();
    let chunk = inputs.len().div_ceil(3).max(1);
    let mut rows: Vec<(String, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = inputs
            .chunks(chunk)
            .map(|part| {
                let dir = dir.path();
                s.spawn(move || {
                    part.iter()
                        .filter_map(|(n, (label, text))| compare(label, text, dir, *n))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    rows.sort();
    rows
}

fn report(what: &str, inputs: usize, rows: &[(String, bool)]) {
    println!("{what}: {inputs} inputs, {} differences", rows.len());
    println!("| input | kubectl | pullcheck |\n|---|---|---|");
    for (row, _) in rows {
        println!("{row}");
    }
    let bad: Vec<&str> = rows
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(r, _)| r.as_str())
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} differences not allowed:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn yaml_fixtures_and_examples_read_as_kubectl_reads_them() {
    let inputs = files();
    assert!(inputs.len() >= 60, "{} files", inputs.len());
    let n = inputs.len();
    let rows = run(inputs);
    report("fixtures and examples", n, &rows);
}

#[test]
fn yaml_scalar_styles_read_as_kubectl_reads_them() {
    let inputs = corpus();
    let n = inputs.len();
    let rows = run(inputs);
    report("generated corpus", n, &rows);
}
