//! `docs/reference/reasons.md` is generated from the code (`Reason`, `Status`, `NotCounted`,
//! `ExitCode`): this test fails when the committed page differs from what the code generates,
//! and `PULLCHECK_BLESS=1 cargo test --test it docs_reasons` rewrites it.

use pullcheck::proof::{Consequence, Flags, ROWS};
use pullcheck::pull_policy::PullPolicy;
use pullcheck::{ExitCode, NotCounted, Reason, Status};
use std::path::Path;

/// Where the page lives, from the repository's root.
const PAGE: &str = "docs/reference/reasons.md";
/// Where "what fails a pod, what only warns" lives.
const WHAT_FAILS: &str = "docs/reference/what-fails.md";

/// A table cell: `|` would end the cell, a newline the row.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The causes that take a failure of `status` out of the exit code, as `` `word` `` items.
fn causes(status: Status, by_flag: bool) -> Vec<String> {
    NotCounted::ALL
        .iter()
        .filter(|c| c.applies_to(status) && c.by_flag() == by_flag)
        .map(|c| format!("`{}`", c.as_str()))
        .collect()
}

/// The page, as the code says it.
fn generate() -> String {
    let mut out = String::new();
    out.push_str(
        "# Statuses, reasons and exit codes\n\
         \n\
         <!-- Generated from the code (src/report/reason.rs and src/report/mod.rs) by\n     \
         tests/it/docs_reasons.rs: do not edit. `PULLCHECK_BLESS=1 cargo test --test it\n     \
         docs_reasons` rewrites it. -->\n\
         \n\
         Every image checked gets a status and, within it, a finer reason: JSON `status` and\n\
         `reason` (`pullcheck check -o json`, schema in\n\
         [pullcheck.schema.json](pullcheck.schema.json)), the first word of each line of the text\n\
         report, and each line of the termination message. Each reason belongs to one status,\n\
         and each status to one exit code.\n\
         \n\
         ## Exit codes\n\
         \n\
         | code | meaning |\n\
         |---|---|\n",
    );
    for code in ExitCode::ALL {
        out.push_str(&format!("| {} | {} |\n", code.code(), cell(code.meaning())));
    }
    out.push_str(
        "\nWhen images fail differently, the lowest code of 3–8 wins, among the images that count\n\
         (see [Not counted](#not-counted)).\n\
         \n\
         ## Statuses\n\
         \n\
         | status | exit code | what it means |\n\
         |---|---|---|\n",
    );
    for status in Status::ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            status.as_str(),
            status.exit_code().code(),
            cell(status.meaning())
        ));
    }
    out.push_str(
        "\n`counts`, at the top of the JSON, holds every status as a key, zeros included: \
         `{\"ok\": 3, \"not_found\": 1, \"invalid_reference\": 0, …}`.\n\
         \n\
         ## Reasons\n\
         \n\
         \"Fatal by default\": whether a failure with this reason counts towards the exit code\n\
         with the default flags; the facts of the node named can take it out (JSON\n\
         `\"fatal\": false` and `not_counted`), and so can the flags in\n\
         [Not counted](#not-counted). The hint is the one the reason carries unless its case has\n\
         a more precise one. The hints are a pod's words; run outside a pod (no\n\
         `KUBERNETES_SERVICE_HOST`, no `--network pod`) the ones that speak of a pod, and the\n\
         summary's \"cannot be checked from this pod\", are said in a workstation's words\n\
         (\"log in to the registry\", \"from this machine\").\n\
         \n\
         | reason | status | exit code | fatal by default | what it means | hint |\n\
         |---|---|---|---|---|---|\n",
    );
    for reason in Reason::ALL {
        let about = reason.about();
        let by_default: Vec<String> = NotCounted::ALL
            .iter()
            .filter(|c| c.by_default() && c.applies_to(about.status))
            .map(|c| format!("`{}`", c.as_str()))
            .collect();
        let fatal = if about.status == Status::Ok {
            "—".to_string()
        } else if !by_default.is_empty() {
            format!("no: {}", by_default.join(", "))
        } else {
            let unless = causes(about.status, false);
            if unless.is_empty() {
                "yes".to_string()
            } else {
                format!("yes, unless {}", unless.join(", "))
            }
        };
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} |\n",
            about.word,
            about.status.as_str(),
            about.status.exit_code().code(),
            fatal,
            cell(about.means),
            cell(about.hint.unwrap_or("—")),
        ));
    }
    out.push_str(
        "\n## Not counted\n\
         \n\
         A failure that does not count is a warning: the text report says `(warning)`, the JSON\n\
         `\"fatal\": false` with `not_counted` naming the cause, and the termination message\n\
         `(not counted: …)`.\n\
         \n\
         | `not_counted` | statuses | by | what was not verified | why |\n\
         |---|---|---|---|---|\n",
    );
    for cause in NotCounted::ALL {
        let statuses: Vec<String> = Status::ALL
            .iter()
            .filter(|s| cause.applies_to(**s))
            .map(|s| format!("`{}`", s.as_str()))
            .collect();
        let by = if cause.by_flag() {
            "a flag"
        } else {
            "the node (default flags)"
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            cause.as_str(),
            statuses.join(", "),
            by,
            cell(cause.what()),
            cell(cause.because()),
        ));
    }
    out
}

/// One cell of the table: what a case ends as.
fn outcome(o: Consequence) -> String {
    match o {
        Consequence::Ok => "starts (`ok`)".to_string(),
        Consequence::Fails(code) => format!("**fails**: exit {}", code.code()),
        Consequence::Warns(why) => format!("warns (`{}`), exit 0", why.as_str()),
    }
}

/// "What fails a pod, what only warns", as `pullcheck::proof` decides it.
fn what_fails() -> String {
    let mut out = String::from(
        "# What fails a pod, what only warns\n\
         \n\
         <!-- Generated from the code (src/proof.rs: the cases and the decisions the check makes)\n     \
         by tests/it/docs_reasons.rs: do not edit. `PULLCHECK_BLESS=1 cargo test --test it\n     \
         docs_reasons` rewrites it. -->\n\
         \n\
         pullcheck fails a pod only on proof: the registry's own answer to the request the node\n\
         would make, from where the node would make it, with every credential the kubelet would\n\
         use; or an invalid reference, a platform absent from an index, a start-check cause.\n\
         Anything the node may know better than the pod is reported (the text report, JSON\n\
         `\"fatal\": false` with `not_counted`, the termination message, one line on stderr) and\n\
         left to the kubelet, whose own back-off then behaves as without pullcheck.\n\
         \n\
         The two columns are `pullcheck check` run by hand with its defaults, and the init\n\
         container as `pullcheck inject` and the webhook write it by default (the node looked up\n\
         for `IfNotPresent` images, `PULLCHECK_ON_UNREACHABLE=warn`, `PULLCHECK_NETWORK=pod` for a\n\
         pod that is not `hostNetwork`). `--job-failure-policy` fails a Job at once on exactly\n\
         the codes that fail here.\n\
         \n\
         | case | verdict from the pod | pull policy | `check` by hand | `inject`, webhook |\n\
         |---|---|---|---|---|\n",
    );
    for row in ROWS {
        let policy = match row.policy {
            PullPolicy::Always => "`Always`",
            PullPolicy::IfNotPresent => "`IfNotPresent`",
            PullPolicy::Never => "`Never`",
        };
        out.push_str(&format!(
            "| {} | `{}` (`{}`) | {} | {} | {} |\n",
            cell(row.case),
            row.reason.status().as_str(),
            row.reason,
            policy,
            outcome(row.outcome(Flags::CHECK)),
            outcome(row.outcome(Flags::INJECT)),
        ));
    }
    out.push_str(
        "\nEach warning says how to make the case provable: `--ca-file` or `inject --ca-configmap`\n\
         for a CA, `--plain-http` or `inject --hosts-from-node` for a plain-HTTP host, `get` on\n\
         nodes for the pod's service account (`examples/node-images-rbac.yaml`) for an image the\n\
         node may hold; the stuck-pod controller (`pullcheck watch`) ends a pod whose pull then\n\
         fails after all. `--on-unreachable fail` and `--on-unverifiable fail` (after `--` for\n\
         `inject`) make exits 6 and 8 count again.\n\
         \n\
         \"Kubernetes 1.35+\" is what the node's Node object says of its kubelet\n\
         (`status.nodeInfo.kubeletVersion`, read with the image list): from v1.35 the kubelet\n\
         re-verifies a pod's credentials before it starts an image the node holds (KEP-2535,\n\
         the feature gate `KubeletEnsureSecretPulledImages`), from records no pod can read, so\n\
         only the registry's `ok` to the pod's credentials proves such an image.\n\
         `--image-pull-credentials-verification never-verify` (after `--` for `inject`) is for\n\
         clusters whose kubelets never verify (the gate off, or\n\
         `imagePullCredentialsVerificationPolicy: NeverVerify`); `verify`, for kubelets of v1.33\n\
         and v1.34 with the gate turned on.\n",
    );
    out
}

/// Compares a generated page with the committed one, or writes it with `PULLCHECK_BLESS=1`.
fn compare_or_bless(page: &str, want: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    if std::env::var_os("PULLCHECK_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{page} differs from what the code generates: run `PULLCHECK_BLESS=1 cargo test --test it docs_reasons` and commit the page"
    );
}

#[test]
fn the_what_fails_page_is_what_the_code_says() {
    compare_or_bless(WHAT_FAILS, &what_fails());
}

#[test]
fn the_reasons_page_is_what_the_code_says() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    let want = generate();
    if std::env::var_os("PULLCHECK_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
        panic!(
            "{PAGE} differs from what the code generates (first at line {}):\n  committed: {:?}\n  generated: {:?}\n\
             Run `PULLCHECK_BLESS=1 cargo test --test it docs_reasons` and commit the page.",
            first + 1,
            have.lines().nth(first).unwrap_or(""),
            want.lines().nth(first).unwrap_or(""),
        );
    }
}

#[test]
fn every_reason_and_cause_is_in_the_page() {
    let page = generate();
    for reason in Reason::ALL {
        assert!(page.contains(&format!("| `{reason}` |")), "{reason}");
    }
    for cause in NotCounted::ALL {
        assert!(
            page.contains(&format!("| `{}` |", cause.as_str())),
            "{cause:?}"
        );
    }
}
