//! The held checker against the one-shot check, in one run, on the integration tests' token
//! registry (`tests/it/common`: a real `docker-registry` with its token server, on 127.0.0.1,
//! named `held.pkg.dev` through `ClientOptions::resolve` so that a pod's network asks it), with
//! alice's pull secret, as the webhook (`--read-pull-secrets`) and the watcher
//! (`--confirm-with-pull-secrets`) ask.
//!
//! Four paths, 100 lookups each, each lookup a new tag of one repository per path (the paths
//! interleaved, lookup by lookup, so that they see the registry alike):
//!
//! - the webhook's verdict lookup before: a blocking-pool thread, a new current-thread runtime
//!   and a one-shot `pullcheck::check` of the one image (what `ask_apart` did), with the
//!   verdicts' options (3 s, a pod's network, unreachable not counted, no start check, no
//!   platform); after: a task on the caller's current-thread runtime (the webhook's) over one
//!   held `pullcheck::Checker`;
//! - the watcher's look before: a one-shot `pullcheck::check` on the caller's runtime with the
//!   look's options (1 s, no platform); after: the watcher's held `Checker`.
//!
//! For each: p50 and p99 of the lookup's latency, and the registry's requests over the 100
//! lookups of its repository, from the registry's access log (manifest `HEAD`s, other
//! requests) and the token server's log (token requests). Then what making a client costs
//! (what the held checker does once, and again every 5 minutes or 1,000 images).
//!
//! Then the flood: 10,000 distinct new images with the verdicts' options, 32 at once (1 in 10 a
//! tag that exists, 9 in 10 in a repository of its own that does not: each a new token scope),
//! before (one-shot) and after (one held checker), each in a process of its own (this binary
//! again) whose `VmRSS` and `VmHWM` (`/proc/self/status`) are printed after every 1,000: the
//! harness's token server, in this process, keeps every token it issued. Nothing is asserted
//! about time or memory. What still grows in both is the process's register of secrets to
//! redact (src/redact.rs): every token fetched is registered there, up to its bound of 16,384
//! forms (past it the oldest make room); with that bound set to 16, the held checker's flood stays flat (18.7 MiB after 1,000
//! images, 18.6 MiB after 10,000).
//!
//! Run: `PATH=$PWD/target/venv/bin:$PATH cargo bench --bench held` (needs
//! `docker-registry` on `PATH`, or `PULLCHECK_TEST_REGISTRY_BIN`). Run without `--bench` (as
//! `cargo test --all-targets` does), it does nothing.

#![allow(clippy::unwrap_used)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use common::{ALICE, ALICE_PASSWORD, Registry, block_on, token_registry};
use pullcheck::check::{Network, OnUnreachable};
use pullcheck::container_start::StartCheck;
use pullcheck::keyring::Keyring;
use pullcheck::registry::{ClientOptions, PlatformPolicy};
use pullcheck::{Checker, Options, Status};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lookups per path.
const LOOKUPS: usize = 100;
/// Images of the flood, and how many at once.
const FLOOD: usize = 10_000;
const FLOOD_AT_ONCE: usize = 32;
/// The name the registry is asked by (the test CA's certificate holds `*.pkg.dev`).
const NAME: &str = "held.pkg.dev";

/// The four paths, in the table's order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    VerdictBefore,
    VerdictAfter,
    LookBefore,
    LookAfter,
}

const PATHS: [Path; 4] = [
    Path::VerdictBefore,
    Path::VerdictAfter,
    Path::LookBefore,
    Path::LookAfter,
];

impl Path {
    fn label(self) -> &'static str {
        match self {
            Path::VerdictBefore => "webhook verdict, before (thread + runtime + check)",
            Path::VerdictAfter => "webhook verdict, after (held Checker)",
            Path::LookBefore => "watcher look, before (check)",
            Path::LookAfter => "watcher look, after (held Checker)",
        }
    }

    fn repository(self) -> &'static str {
        match self {
            Path::VerdictBefore => "held/verdict-before",
            Path::VerdictAfter => "held/verdict-after",
            Path::LookBefore => "held/look-before",
            Path::LookAfter => "held/look-after",
        }
    }
}

/// What the benchmark asks with: the registry's name pinned, its CA, no platform.
struct Setup {
    settings: ClientOptions,
    keyring: Keyring,
    host: String,
}

impl Setup {
    fn new(reg: &Registry) -> Setup {
        let port = reg
            .host()
            .rsplit(':')
            .next()
            .unwrap()
            .parse::<u16>()
            .unwrap();
        Setup::of(port, reg.ca_der().unwrap().clone())
    }

    /// A flood's process: the registry's port and CA from its parent.
    fn from_env() -> Setup {
        use base64::Engine;
        let port = std::env::var("HELD_PORT").unwrap().parse().unwrap();
        let ca = base64::engine::general_purpose::STANDARD
            .decode(std::env::var("HELD_CA").unwrap())
            .unwrap();
        Setup::of(port, ca.into())
    }

    fn of(port: u16, ca: rustls_pki_types::CertificateDer<'static>) -> Setup {
        let host = format!("{NAME}:{port}");
        let settings = ClientOptions {
            ca_certs: vec![ca],
            resolve: vec![(NAME.to_string(), ([127, 0, 0, 1], port).into())],
            platform: PlatformPolicy::none(),
            ..ClientOptions::default()
        };
        use base64::Engine;
        let auth =
            base64::engine::general_purpose::STANDARD.encode(format!("{ALICE}:{ALICE_PASSWORD}"));
        let mut keyring = Keyring::default();
        keyring
            .add_json(
                std::path::Path::new("config.json"),
                "pull secret",
                &format!(r#"{{"auths": {{"{host}": {{"auth": "{auth}"}}}}}}"#),
            )
            .unwrap();
        Setup {
            settings,
            keyring,
            host,
        }
    }

    /// The webhook's verdict options (`cluster/ask.rs`'s `Ask::verdict`).
    fn verdict(&self) -> Options {
        Options {
            timeout: Duration::from_secs(3),
            keyring: self.keyring.clone(),
            concurrency: 1,
            client: self.settings.clone(),
            on_unreachable: OnUnreachable::Warn,
            network: Network::Pod,
            start_check: StartCheck::Off,
            ..Options::default()
        }
    }

    /// The watcher's look options (`cluster/ask.rs`'s `Ask::look`).
    fn look(&self) -> Options {
        Options {
            timeout: Duration::from_secs(1),
            keyring: self.keyring.clone(),
            client: self.settings.clone(),
            ..Options::default()
        }
    }
}

/// One lookup of `image` on `path`: its latency and status.
async fn lookup(
    path: Path,
    image: String,
    setup: &Arc<Setup>,
    held: &Arc<Checker>,
) -> (Duration, Option<Status>) {
    let started = Instant::now();
    let status = match path {
        Path::VerdictBefore => {
            let options = setup.verdict();
            tokio::task::spawn_blocking(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(pullcheck::check(&[image], &options))
            })
            .await
            .unwrap()
        }
        Path::VerdictAfter => {
            let (held, options) = (held.clone(), setup.verdict());
            tokio::spawn(async move { held.check(&[image], &options).await })
                .await
                .unwrap()
        }
        Path::LookBefore => pullcheck::check(&[image], &setup.look()).await,
        Path::LookAfter => held.check(&[image], &setup.look()).await,
    };
    (started.elapsed(), status.images.first().map(|r| r.status))
}

/// Requests of one repository: manifest `HEAD`s, other registry requests, token requests.
fn counts(reg: &Registry, repository: &str) -> [usize; 3] {
    let requests = reg.requests_for(repository);
    let heads = requests
        .iter()
        .filter(|r| r.method == "HEAD" && r.path.contains("/manifests/"))
        .count();
    let tokens = reg.token_server().unwrap().requests_for(repository).len();
    [heads, requests.len() - heads, tokens]
}

/// The `tags` of `repository`: one image pushed, its manifest put again under the others.
fn seed(reg: &Registry, repository: &str, tags: impl Iterator<Item = String>) {
    let tags: Vec<String> = tags.collect();
    let (first, tags) = tags.split_first().unwrap();
    reg.push_oci_manifest(repository, first);
    let client = reg.http_client();
    let base = reg.base_url();
    let auth = reg.push_authorization(repository).unwrap();
    block_on(async {
        let manifest = client
            .get(format!("{base}/v2/{repository}/manifests/{first}"))
            .header("Accept", common::media::OCI_MANIFEST)
            .header("Authorization", &auth)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        for tag in tags {
            let resp = client
                .put(format!("{base}/v2/{repository}/manifests/{tag}"))
                .header("Content-Type", common::media::OCI_MANIFEST)
                .header("Authorization", &auth)
                .body(manifest.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 201, "PUT {repository}:{tag}");
        }
    });
}

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("benches/held.rs: a benchmark; run it with `cargo bench --bench held`");
        return;
    }
    // The server's runtime, as `cluster/serve.rs` makes it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(mode) = args
        .iter()
        .position(|a| a == "--flood")
        .map(|i| &args[i + 1])
    {
        let setup = Arc::new(Setup::from_env());
        runtime.block_on(flood(setup, mode == "after"));
        return;
    }
    let reg = token_registry();
    let setup = Arc::new(Setup::new(reg));
    let t = Instant::now();
    for path in PATHS {
        seed(
            reg,
            path.repository(),
            (0..LOOKUPS).map(|i| format!("t{i:03}")),
        );
    }
    seed(
        reg,
        "held/flood-found",
        (0..FLOOD / 10).map(|i| format!("f{i:05}")),
    );
    println!("seeded in {:.1}s", t.elapsed().as_secs_f64());
    runtime.block_on(paths(reg, &setup));
    runtime.block_on(client_made(&setup));
    floods(reg);
}

/// The four paths, interleaved, and their table.
async fn paths(reg: &Registry, setup: &Arc<Setup>) {
    // One untimed one-shot check first: the registry's own warm-up, counted nowhere.
    let warm = format!("{}/{}:t000", setup.host, Path::LookBefore.repository());
    pullcheck::check(&[warm], &setup.look()).await;
    let before: Vec<[usize; 3]> = PATHS.iter().map(|p| counts(reg, p.repository())).collect();
    let verdicts = Arc::new(Checker::new(setup.settings.clone()));
    let looks = Arc::new(Checker::new(setup.settings.clone()));
    let mut times = vec![Vec::new(); PATHS.len()];
    let mut found = [0usize; 4];
    for i in 0..LOOKUPS {
        for k in 0..PATHS.len() {
            // The order rotates from one lookup to the next.
            let n = (i + k) % PATHS.len();
            let path = PATHS[n];
            let held = match path {
                Path::VerdictAfter | Path::VerdictBefore => &verdicts,
                Path::LookAfter | Path::LookBefore => &looks,
            };
            let image = format!("{}/{}:t{i:03}", setup.host, path.repository());
            let (took, status) = lookup(path, image, setup, held).await;
            times[n].push(took);
            found[n] += usize::from(status == Some(Status::Ok));
        }
    }
    println!(
        "\n{LOOKUPS} lookups per path, each a new tag of the path's repository (token registry, alice's pull secret)\n"
    );
    println!(
        "{:<52} {:>7} {:>7} {:>6} {:>6} {:>6} {:>7}",
        "path", "p50 ms", "p99 ms", "found", "HEADs", "other", "tokens"
    );
    for (n, path) in PATHS.iter().enumerate() {
        let mut sorted = times[n].clone();
        sorted.sort();
        let after = counts(reg, path.repository());
        let delta: Vec<usize> = (0..3).map(|j| after[j] - before[n][j]).collect();
        println!(
            "{:<52} {:>7.2} {:>7.2} {:>6} {:>6} {:>6} {:>7}",
            path.label(),
            percentile(&sorted, 0.50),
            percentile(&sorted, 0.99),
            found[n],
            delta[0],
            delta[1],
            delta[2]
        );
    }
}

/// What making a client costs: a new checker's check of no image (the client made, nothing
/// asked), the median of 21.
async fn client_made(setup: &Setup) {
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..21 {
        let checker = Checker::new(setup.settings.clone());
        let started = Instant::now();
        checker.check(&[], &setup.verdict()).await;
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "\na client made (a new Checker's check of no image): median {:.2} ms",
        percentile(&times, 0.5)
    );
}

/// The flood, each path in a process of its own (this binary again, with `--flood before` or
/// `--flood after`), so that what is measured is the asker's memory alone: the token server of
/// the harness runs in this process and keeps a log of every token it issued.
fn floods(reg: &Registry) {
    use base64::Engine;
    let port = reg.host().rsplit(':').next().unwrap().to_string();
    let ca = base64::engine::general_purpose::STANDARD.encode(reg.ca_der().unwrap());
    println!(
        "\nflood: {FLOOD} distinct new images, {FLOOD_AT_ONCE} at once (1 in 10 found, 9 in 10 in a repository of its own that does not exist), each path in a process of its own\n"
    );
    println!(
        "{:<28} {:>7} {:>10} {:>10} {:>10} {:>8} {:>8}",
        "path", "images", "VmRSS MiB", "VmHWM MiB", "elapsed s", "found", "missing"
    );
    for mode in ["before", "after"] {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--bench", "--flood", mode])
            .env("HELD_PORT", &port)
            .env("HELD_CA", &ca)
            .status()
            .unwrap();
        assert!(status.success(), "the {mode} flood failed");
    }
}

/// One path's flood, in this process (see [`floods`]): memory after every 1,000 images.
async fn flood(setup: Arc<Setup>, held: bool) {
    let checker = Arc::new(Checker::new(setup.settings.clone()));
    let label = match held {
        true => "verdicts, after (held)",
        false => "verdicts, before (one-shot)",
    };
    let image = |i: usize| match i % 10 {
        0 => format!("{}/held/flood-found:f{:05}", setup.host, i / 10),
        _ => format!("{}/held/flood/r{i:05}:v1", setup.host),
    };
    let line = |done: usize, elapsed: f64, found: usize, missing: usize| {
        let (rss, hwm) = memory();
        println!(
            "{label:<28} {done:>7} {rss:>10.1} {hwm:>10.1} {elapsed:>10.1} {found:>8} {missing:>8}"
        );
    };
    line(0, 0.0, 0, 0);
    let started = Instant::now();
    let (mut found, mut missing) = (0, 0);
    let mut tasks = tokio::task::JoinSet::new();
    let (mut next, mut done) = (0, 0);
    while done < FLOOD {
        while next < FLOOD && tasks.len() < FLOOD_AT_ONCE {
            let path = match held {
                true => Path::VerdictAfter,
                false => Path::VerdictBefore,
            };
            let (setup, checker, image) = (setup.clone(), checker.clone(), image(next));
            tasks.spawn(async move { lookup(path, image, &setup, &checker).await });
            next += 1;
        }
        match tasks.join_next().await.unwrap().unwrap().1 {
            Some(Status::Ok) => found += 1,
            Some(Status::NotFound) => missing += 1,
            _ => {}
        }
        done += 1;
        if done % 1_000 == 0 {
            line(done, started.elapsed().as_secs_f64(), found, missing);
        }
    }
}
