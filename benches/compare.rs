//! pullcheck against the tools people use instead, on real registries on 127.0.0.1.
//!
//! Three registries from the integration-test harness (`tests/it/common`): plain HTTP; HTTPS with
//! Basic auth; HTTPS with token auth (and its token server, same CA). Each gets the same 100 tags
//! of one repository (`bench/app:t000`..`t099`, even tags an OCI manifest, odd tags a Docker
//! schema 2 manifest). For 1, 10 and 100 of those images on each registry, these check that the
//! images exist:
//!
//! - `curl -sfI` with the four manifest types in `Accept`, one process per image: one `HEAD`,
//!   the floor for "one process, one request" (TLS: `--cacert`; Basic: `-u`; token registry: a
//!   pull token for alice fetched once, outside the timing, and sent as `Authorization: Bearer`);
//! - `skopeo inspect --raw docker://...`, one process per image (plain: `--tls-verify=false`;
//!   TLS: `--cert-dir` holding the CA as `ca.crt`; `--creds` for alice);
//! - `pullcheck check -q --termination-log ""` with all the images in one process
//!   (`--plain-http`, `--ca-file`, `--docker-config` with alice's `auth`);
//! - for 10 and 100 images, as a reference: the same curl with all N URLs in one process
//!   (`-Z --parallel-max 16`): no per-process cost, about what the registry itself needs.
//!
//! First one untimed run of every tool and case, each process under GNU `/usr/bin/time -f %M`
//! (peak RSS = max over the tool's processes), with the registry's access log and the token
//! server's log read before and after (requests per run). Then the timed rounds, interleaved:
//! every round visits every case that still needs rounds and runs every tool there, the order of
//! the tools rotating from round to round. Wall time of curl and skopeo = from the first spawn to
//! the last exit of their N processes, run one after the other. Also recorded per timed run, from
//! `/proc`: the CPU time of the tool's processes (this process's `cutime + cstime`) and of the
//! `docker-registry` process (clock ticks: their mean over the rounds is what is printed).
//! Medians are reported; nothing is asserted about time: the "targets" table says pass or fail.
//!
//! Environment: `PULLCHECK_BENCH_BIN` (the binary under test; default
//! `target/release/pullcheck` in the package), `PULLCHECK_BENCH_ARGS` (extra arguments for
//! `pullcheck check`, whitespace-separated), `PULLCHECK_BENCH_QUICK=1` (few rounds: a smoke run).
//! Needs `docker-registry`, `curl`, `skopeo` and GNU `time` (`bench/run.sh` installs them).
//! Run without `--bench` (as `cargo test --all-targets` does), it does nothing.

#![allow(clippy::unwrap_used)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::{ALICE, ALICE_PASSWORD, Registry, media};

/// The repository on every registry.
const REPO: &str = "bench/app";
/// Distinct tags pushed to it.
const TAGS: usize = 100;
/// (images, timed rounds) per case.
const CASES: [(usize, usize); 3] = [(1, 15), (10, 8), (100, 5)];
/// With `PULLCHECK_BENCH_QUICK`.
const QUICK_CASES: [(usize, usize); 3] = [(1, 3), (10, 2), (100, 1)];
/// The curl token is fetched again (outside the timing) when older than this; tokens live 300 s.
const TOKEN_REFRESH: Duration = Duration::from_secs(150);
const MIB: f64 = 1024.0 * 1024.0;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    TlsBasic,
    Token,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Curl,
    /// A reference, not a competitor: curl with all N URLs in one process (`-Z`, 16 at once,
    /// like pullcheck's default `--concurrency`). No per-process cost: about what the registry
    /// itself needs for N `HEAD`s.
    CurlOneProcess,
    Skopeo,
    Pullcheck,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Curl => "curl",
            Tool::CurlOneProcess => "curl -Z",
            Tool::Skopeo => "skopeo",
            Tool::Pullcheck => "pullcheck",
        }
    }

    /// Index into the per-tool arrays of a [`Case`].
    fn ix(self) -> usize {
        self as usize
    }

    /// The tools of a case with `images` images (`curl -Z` would be `curl` for one image).
    fn for_images(images: usize) -> Vec<Tool> {
        let mut tools = vec![Tool::Curl];
        if images > 1 {
            tools.push(Tool::CurlOneProcess);
        }
        tools.extend([Tool::Skopeo, Tool::Pullcheck]);
        tools
    }
}

/// One registry and what each tool needs to talk to it.
struct Target {
    kind: Kind,
    label: &'static str,
    reg: &'static Registry,
    host: String,
    /// The CA (PEM) for curl `--cacert` and pullcheck `--ca-file`.
    ca: Option<PathBuf>,
    /// A folder holding the CA as `ca.crt`, for skopeo `--cert-dir`.
    cert_dir: Option<PathBuf>,
    /// alice's credentials as a docker config, for pullcheck.
    docker_config: Option<PathBuf>,
    /// curl's pull token (token registry) and when it was fetched.
    bearer: Option<(String, Instant)>,
}

impl Target {
    fn new(kind: Kind, reg: &'static Registry, work: &Path) -> Target {
        let label = match kind {
            Kind::Plain => "plain HTTP",
            Kind::TlsBasic => "TLS + Basic",
            Kind::Token => "TLS + token",
        };
        let host = reg.host();
        let dir = work.join(match kind {
            Kind::Plain => "plain",
            Kind::TlsBasic => "basic",
            Kind::Token => "token",
        });
        fs::create_dir_all(&dir).unwrap();
        let (ca, cert_dir) = match reg.ca_pem_path() {
            Some(pem) => {
                let ca = dir.join("ca.pem");
                fs::copy(pem, &ca).unwrap();
                let cert_dir = dir.join("certs.d");
                fs::create_dir_all(&cert_dir).unwrap();
                fs::copy(pem, cert_dir.join("ca.crt")).unwrap();
                (Some(ca), Some(cert_dir))
            }
            None => (None, None),
        };
        let docker_config = (kind != Kind::Plain).then(|| {
            let auth = base64::engine::general_purpose::STANDARD
                .encode(format!("{ALICE}:{ALICE_PASSWORD}"));
            let path = dir.join("config.json");
            fs::write(
                &path,
                format!(r#"{{"auths": {{"{host}": {{"auth": "{auth}"}}}}}}"#),
            )
            .unwrap();
            path
        });
        Target {
            kind,
            label,
            reg,
            host,
            ca,
            cert_dir,
            docker_config,
            bearer: None,
        }
    }

    fn image(&self, i: usize) -> String {
        format!("{}/{REPO}:{}", self.host, tag(i))
    }

    /// Fetches curl's token when there is none or it is getting old (never inside a timing).
    fn refresh_bearer(&mut self) {
        if self.kind != Kind::Token {
            return;
        }
        if self
            .bearer
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < TOKEN_REFRESH)
        {
            return;
        }
        let server = self.reg.token_server().expect("token server");
        let token = server.fetch_token(
            &self.reg.http_client(),
            Some((ALICE, ALICE_PASSWORD)),
            &format!("repository:{REPO}:pull"),
        );
        self.bearer = Some((token, Instant::now()));
    }

    fn token_requests(&self) -> usize {
        self.reg.token_server().map_or(0, |s| s.requests().len())
    }
}

fn tag(i: usize) -> String {
    format!("t{i:03}")
}

/// A process to run: program and arguments (environment and stdio are set by [`Bench::command`]).
struct Invocation {
    program: OsString,
    args: Vec<OsString>,
}

impl Invocation {
    fn new(program: impl Into<OsString>) -> Invocation {
        Invocation {
            program: program.into(),
            args: Vec::new(),
        }
    }

    fn arg(mut self, arg: impl Into<OsString>) -> Invocation {
        self.args.push(arg.into());
        self
    }

    fn args<I: Into<OsString>>(mut self, args: impl IntoIterator<Item = I>) -> Invocation {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    fn display(&self) -> String {
        let mut s = self.program.to_string_lossy().into_owned();
        for a in &self.args {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains([' ', '"', '*']) {
                let _ = write!(s, " '{a}'");
            } else {
                let _ = write!(s, " {a}");
            }
        }
        s
    }
}

/// Requests one run made, from the registry's access log and the token server's log.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    /// `GET /v2/`.
    ping: usize,
    head_manifest: usize,
    get_manifest: usize,
    other: usize,
    token: usize,
}

impl Counts {
    fn total(&self) -> usize {
        self.ping + self.head_manifest + self.get_manifest + self.other + self.token
    }
}

/// One (registry, image count) case. Per-tool arrays are indexed by [`Tool::ix`].
struct Case {
    target: usize,
    images: usize,
    rounds: usize,
    tools: Vec<Tool>,
    /// Wall time of each timed run.
    times: [Vec<Duration>; 4],
    /// CPU time (user + system) of the tool's processes, each timed run.
    cpu: [Vec<Duration>; 4],
    /// CPU time of the `docker-registry` process during each timed run of the tool.
    registry_cpu: [Vec<Duration>; 4],
    /// Peak RSS (KiB), max over the tool's processes in the untimed run.
    rss_kib: [Option<u64>; 4],
    /// Requests of the untimed run.
    counts: [Counts; 4],
}

/// What one timed run took.
struct Sample {
    wall: Duration,
    /// CPU of the run's processes (this process's `cutime + cstime`, before and after).
    cpu: Duration,
    /// CPU of the registry during the run.
    registry_cpu: Duration,
}

/// (utime + stime, cutime + cstime) of process `pid` (or `self`), in clock ticks, from
/// `/proc/<pid>/stat`.
fn proc_cpu_ticks(pid: &str) -> (u64, u64) {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .map(|f| f.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    // Fields 14-17 are utime, stime, cutime, cstime; what follows `)` starts at field 3.
    let f = |n: usize| fields.get(n - 3).copied().unwrap_or(0);
    (f(14) + f(15), f(16) + f(17))
}

struct Bench {
    bin: PathBuf,
    extra_args: Vec<String>,
    /// `HOME` and secrets folder of every process: no workstation config takes part.
    home: PathBuf,
    secrets: PathBuf,
    work: PathBuf,
    time_bin: Option<PathBuf>,
    /// `getconf CLK_TCK`.
    clock_ticks: u64,
}

impl Bench {
    /// The processes one run of `tool` on `n` images of `target` consists of.
    fn invocations(&self, tool: Tool, target: &Target, n: usize) -> Vec<Invocation> {
        let images: Vec<String> = (0..n).map(|i| target.image(i)).collect();
        let url = |i: usize| format!("{}/v2/{REPO}/manifests/{}", target.reg.base_url(), tag(i));
        let curl = || {
            let mut inv = Invocation::new("curl")
                .arg("-sfI")
                .arg("-H")
                .arg(format!("Accept: {}", media::ACCEPT_ALL));
            if let Some(ca) = &target.ca {
                inv = inv.arg("--cacert").arg(ca);
            }
            match target.kind {
                Kind::Plain => {}
                Kind::TlsBasic => {
                    inv = inv.arg("-u").arg(format!("{ALICE}:{ALICE_PASSWORD}"));
                }
                Kind::Token => {
                    let (token, _) = target.bearer.as_ref().expect("curl token fetched");
                    inv = inv.arg("-H").arg(format!("Authorization: Bearer {token}"));
                }
            }
            inv
        };
        match tool {
            Tool::Curl => (0..n).map(|i| curl().arg(url(i))).collect(),
            Tool::CurlOneProcess => {
                vec![
                    curl()
                        .args(["-Z", "--parallel-max", "16"])
                        .args((0..n).map(url)),
                ]
            }
            Tool::Skopeo => images
                .iter()
                .map(|image| {
                    let mut inv = Invocation::new("skopeo").args(["inspect", "--raw"]);
                    match &target.cert_dir {
                        Some(dir) => inv = inv.arg("--cert-dir").arg(dir),
                        None => inv = inv.arg("--tls-verify=false"),
                    }
                    if target.kind != Kind::Plain {
                        inv = inv.arg("--creds").arg(format!("{ALICE}:{ALICE_PASSWORD}"));
                    }
                    inv.arg(format!("docker://{image}"))
                })
                .collect(),
            Tool::Pullcheck => {
                let mut inv =
                    Invocation::new(&self.bin).args(["check", "-q", "--termination-log", ""]);
                if target.kind == Kind::Plain {
                    inv = inv.arg("--plain-http").arg(&target.host);
                }
                if let Some(ca) = &target.ca {
                    inv = inv.arg("--ca-file").arg(ca);
                }
                if let Some(config) = &target.docker_config {
                    inv = inv.arg("--docker-config").arg(config);
                }
                vec![inv.args(&self.extra_args).args(images)]
            }
        }
    }

    /// A hermetic `Command`: no proxy, no `PULLCHECK_*`, `DOCKER_CONFIG` or containers auth
    /// file from the caller, `HOME` an empty folder, stdin and stdout `/dev/null`.
    fn command(&self, inv: &Invocation, rss_file: Option<&Path>) -> Command {
        let mut cmd = match (rss_file, &self.time_bin) {
            (Some(file), Some(time)) => {
                let mut c = Command::new(time);
                c.args(["-f", "%M", "-o"]).arg(file).arg(&inv.program);
                c
            }
            _ => Command::new(&inv.program),
        };
        cmd.args(&inv.args);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("PULLCHECK_")
                || k.to_ascii_lowercase().ends_with("_proxy")
                || matches!(
                    k.as_ref(),
                    "DOCKER_CONFIG" | "REGISTRY_AUTH_FILE" | "XDG_RUNTIME_DIR" | "XDG_CONFIG_HOME"
                )
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", &self.home)
            .env("PULLCHECK_SECRETS_DIR", &self.secrets)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    }

    /// One timed run: the wall time from the first spawn to the last exit (and, read outside
    /// that, the CPU the processes and the registry used).
    fn timed_run(&self, invs: &[Invocation], registry_pid: u32, what: &str) -> Sample {
        let mut cmds: Vec<Command> = invs
            .iter()
            .map(|inv| {
                let mut c = self.command(inv, None);
                c.stderr(Stdio::null());
                c
            })
            .collect();
        let registry_pid = registry_pid.to_string();
        let (_, children_before) = proc_cpu_ticks("self");
        let (registry_before, _) = proc_cpu_ticks(&registry_pid);
        let start = Instant::now();
        for (cmd, inv) in cmds.iter_mut().zip(invs) {
            let status = cmd
                .status()
                .unwrap_or_else(|e| panic!("{what}: spawn: {e}"));
            if !status.success() {
                panic!("{what}: `{}` failed: {status}", inv.display());
            }
        }
        let wall = start.elapsed();
        let (registry_after, _) = proc_cpu_ticks(&registry_pid);
        let (_, children_after) = proc_cpu_ticks("self");
        let ticks = |t: u64| Duration::from_secs_f64(t as f64 / self.clock_ticks as f64);
        Sample {
            wall,
            cpu: ticks(children_after.saturating_sub(children_before)),
            registry_cpu: ticks(registry_after.saturating_sub(registry_before)),
        }
    }

    /// The untimed run: every process under `/usr/bin/time -f %M`, stderr kept for errors.
    /// Returns the peak RSS in KiB (max over the processes).
    fn measured_run(&self, invs: &[Invocation], what: &str) -> Option<u64> {
        let rss_file = self.work.join("rss.txt");
        let mut peak: Option<u64> = None;
        for inv in invs {
            let _ = fs::remove_file(&rss_file);
            let out = self
                .command(inv, Some(&rss_file))
                .stderr(Stdio::piped())
                .output()
                .unwrap_or_else(|e| panic!("{what}: spawn `{}`: {e}", inv.display()));
            if !out.status.success() {
                panic!(
                    "{what}: `{}` failed: {}\n{}",
                    inv.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let kib = fs::read_to_string(&rss_file)
                .ok()
                .and_then(|s| s.lines().last().and_then(|l| l.trim().parse::<u64>().ok()));
            if let Some(k) = kib {
                peak = Some(peak.map_or(k, |p| p.max(k)));
            }
        }
        peak
    }
}

fn classify(requests: &[common::Request], token: usize) -> Counts {
    let mut c = Counts {
        token,
        ..Counts::default()
    };
    for r in requests {
        let manifest = r.path.contains("/manifests/");
        match (r.method.as_str(), manifest) {
            ("GET", _) if r.path == "/v2/" => c.ping += 1,
            ("HEAD", true) => c.head_manifest += 1,
            ("GET", true) => c.get_manifest += 1,
            _ => c.other += 1,
        }
    }
    c
}

fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2,
    }
}

/// The mean (CPU times are counted in clock ticks: only their mean over the rounds means much).
fn mean(times: &[Duration]) -> Duration {
    match u32::try_from(times.len()) {
        Ok(n) if n > 0 => times.iter().sum::<Duration>() / n,
        _ => Duration::ZERO,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "n/a".to_string(),
        |k| format!("{:.1} MiB", k as f64 / 1024.0),
    )
}

fn first_line(program: &str, arg: &str) -> String {
    Command::new(program)
        .arg(arg)
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| format!("{program}: not found"))
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

struct Check {
    name: String,
    measured: String,
    limit: &'static str,
    pass: bool,
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` (scripts/test.sh) runs this
    // binary too, without it: then there is nothing to do.
    if !std::env::args().skip(1).any(|a| a == "--bench") {
        println!(
            "benches/compare.rs: a benchmark; run it with `cargo bench --bench compare` or bench/run.sh"
        );
        return;
    }
    let started = Instant::now();
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = match std::env::var_os("PULLCHECK_BENCH_BIN") {
        Some(b) => PathBuf::from(b),
        None => manifest_dir.join("target/release/pullcheck"),
    };
    assert!(
        bin.is_file(),
        "{}: no such file: build it (`cargo build --release`) or set PULLCHECK_BENCH_BIN",
        bin.display()
    );
    let extra_args: Vec<String> = std::env::var("PULLCHECK_BENCH_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let quick = std::env::var_os("PULLCHECK_BENCH_QUICK").is_some_and(|v| !v.is_empty());
    let cases_spec = if quick { QUICK_CASES } else { CASES };
    let time_bin = Path::new("/usr/bin/time");
    let time_bin = Command::new(time_bin)
        .args(["-f", "%M", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        .then(|| time_bin.to_path_buf());
    let clock_ticks = first_line("getconf", "CLK_TCK")
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|&t| t > 0)
        .unwrap_or(100);

    let work = tempfile::Builder::new()
        .prefix("pullcheck-bench-")
        .tempdir()
        .unwrap();
    let home = work.path().join("home");
    let secrets = work.path().join("secrets");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&secrets).unwrap();
    let bench = Bench {
        bin,
        extra_args,
        home,
        secrets,
        work: work.path().to_path_buf(),
        time_bin,
        clock_ticks,
    };

    println!("pullcheck vs curl vs skopeo, registries on 127.0.0.1");
    println!(
        "  pullcheck: {} ({})",
        bench.bin.display(),
        first_line(&bench.bin.to_string_lossy(), "--version")
    );
    if !bench.extra_args.is_empty() {
        println!("  pullcheck extra args: {}", bench.extra_args.join(" "));
    }
    println!("  curl:      {}", first_line("curl", "--version"));
    println!("  skopeo:    {}", first_line("skopeo", "--version"));
    println!(
        "  registry:  {}",
        first_line("docker-registry", "--version")
    );
    println!(
        "  peak RSS:  {}",
        match &bench.time_bin {
            Some(_) => "GNU /usr/bin/time -f %M around every process of one untimed run",
            None => "n/a (GNU time is not installed: apt-get install time)",
        }
    );
    println!(
        "  cpus: {}, load average at start: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loadavg()
    );

    // Registries and fixtures.
    let t = Instant::now();
    let regs = [
        (Kind::Plain, common::plain_registry()),
        (Kind::TlsBasic, common::tls_basic_registry()),
        (Kind::Token, common::token_registry()),
    ];
    let mut targets: Vec<Target> = regs
        .iter()
        .map(|&(kind, reg)| Target::new(kind, reg, work.path()))
        .collect();
    for target in &targets {
        for i in 0..TAGS {
            if i % 2 == 0 {
                target.reg.push_oci_manifest(REPO, &tag(i));
            } else {
                target.reg.push_docker_schema2(REPO, &tag(i));
            }
        }
    }
    println!(
        "  3 registries started, {TAGS} tags of {REPO} pushed to each, in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let mut cases: Vec<Case> = Vec::new();
    for target in 0..targets.len() {
        for &(images, rounds) in &cases_spec {
            cases.push(Case {
                target,
                images,
                rounds,
                tools: Tool::for_images(images),
                times: Default::default(),
                cpu: Default::default(),
                registry_cpu: Default::default(),
                rss_kib: [None; 4],
                counts: [Counts::default(); 4],
            });
        }
    }

    // One untimed run of every tool and case: peak RSS and requests (and a warm-up).
    for case in &mut cases {
        let target = &mut targets[case.target];
        target.refresh_bearer();
        for &tool in &case.tools {
            let invs = bench.invocations(tool, target, case.images);
            let what = format!("{} {} images, {}", target.label, case.images, tool.name());
            let before = target.reg.requests().len();
            let tokens_before = target.token_requests();
            case.rss_kib[tool.ix()] = bench.measured_run(&invs, &what);
            let requests = target.reg.requests();
            let tokens = target.token_requests() - tokens_before;
            case.counts[tool.ix()] = classify(&requests[before..], tokens);
        }
    }
    eprintln!(
        "untimed runs done at {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Timed rounds, interleaved: every round visits every case that still needs rounds, and
    // runs every tool there, in an order rotating from round to round.
    let max_rounds = cases.iter().map(|c| c.rounds).max().unwrap_or(0);
    for round in 0..max_rounds {
        for case in cases.iter_mut().filter(|c| c.rounds > round) {
            let target = &mut targets[case.target];
            target.refresh_bearer();
            let n = case.tools.len();
            for k in 0..n {
                let tool = case.tools[(k + round) % n];
                let invs = bench.invocations(tool, target, case.images);
                let what = format!("{} {} images, {}", target.label, case.images, tool.name());
                let sample = bench.timed_run(&invs, target.reg.pid(), &what);
                case.times[tool.ix()].push(sample.wall);
                case.cpu[tool.ix()].push(sample.cpu);
                case.registry_cpu[tool.ix()].push(sample.registry_cpu);
            }
        }
        eprintln!(
            "round {}/{max_rounds} done at {:.1} s",
            round + 1,
            started.elapsed().as_secs_f64()
        );
    }

    // Report.
    println!();
    println!(
        "wall: median over the timed rounds (curl, skopeo: the loop of N processes, one after the other)"
    );
    println!(
        "cpu: user + system of the tool's processes, mean per run; reg cpu: of docker-registry during the run \
         (both counted in {:.0} ms clock ticks: rough for short runs)",
        1000.0 / bench.clock_ticks as f64
    );
    println!(
        "curl -Z: all N URLs in one curl process, 16 at once (a reference: the registry's own cost)"
    );
    println!(
        "requests: one untimed run, from the registry's access log and the token server's log"
    );
    let (curl, skopeo, pullcheck) = (Tool::Curl.ix(), Tool::Skopeo.ix(), Tool::Pullcheck.ix());
    for case in &cases {
        let target = &targets[case.target];
        println!();
        println!(
            "== {} ({}), {} image{}, {} rounds ==",
            target.label,
            target.host,
            case.images,
            if case.images == 1 { "" } else { "s" },
            case.times[pullcheck].len()
        );
        println!(
            "  {:<10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}   requests: all = /v2/ + HEAD + GET manifest + other + token",
            "tool", "median", "min", "max", "cpu", "reg cpu", "peak RSS"
        );
        for &tool in &case.tools {
            let ix = tool.ix();
            let times = &case.times[ix];
            let c = &case.counts[ix];
            let curl_token =
                target.kind == Kind::Token && matches!(tool, Tool::Curl | Tool::CurlOneProcess);
            let note = if curl_token {
                "  (token fetched once, beforehand)"
            } else {
                ""
            };
            println!(
                "  {:<10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}   {} = {} + {} + {} + {} + {}{note}",
                tool.name(),
                ms(median(times)),
                ms(times.iter().min().copied().unwrap_or_default()),
                ms(times.iter().max().copied().unwrap_or_default()),
                ms(mean(&case.cpu[ix])),
                ms(mean(&case.registry_cpu[ix])),
                mib(case.rss_kib[ix]),
                c.total(),
                c.ping,
                c.head_manifest,
                c.get_manifest,
                c.other,
                c.token
            );
        }
        let p = median(&case.times[pullcheck]);
        let mut line = format!(
            "  pullcheck/curl = {:.3}   pullcheck/skopeo = {:.3}",
            ratio(p, median(&case.times[curl])),
            ratio(p, median(&case.times[skopeo]))
        );
        if case.tools.contains(&Tool::CurlOneProcess) {
            let _ = write!(
                line,
                "   pullcheck/(curl -Z) = {:.3}",
                ratio(p, median(&case.times[Tool::CurlOneProcess.ix()]))
            );
        }
        println!("{line}");
    }

    // Targets.
    let find = |kind: Kind, images: usize| {
        cases
            .iter()
            .find(|c| targets[c.target].kind == kind && c.images == images)
            .expect("case")
    };
    let med = |case: &Case, ix: usize| median(&case.times[ix]);
    let mut checks: Vec<Check> = Vec::new();
    let c = find(Kind::Plain, 1);
    let r = ratio(med(c, pullcheck), med(c, curl));
    checks.push(Check {
        name: "1 image, plain HTTP: pullcheck / curl".into(),
        measured: format!("{r:.3}"),
        limit: "<= 1.0",
        pass: r <= 1.0,
    });
    let c = find(Kind::Token, 1);
    let r = ratio(med(c, pullcheck), med(c, skopeo));
    checks.push(Check {
        name: "1 image, TLS + token: pullcheck / skopeo".into(),
        measured: format!("{r:.3}"),
        limit: "<= 0.5",
        pass: r <= 0.5,
    });
    for target in &targets {
        let c = find(target.kind, 100);
        let r = ratio(med(c, pullcheck), med(c, skopeo));
        checks.push(Check {
            name: format!("100 images, {}: pullcheck / 100 skopeo runs", target.label),
            measured: format!("{r:.4}"),
            limit: "<= 0.05",
            pass: r <= 0.05,
        });
    }
    let r = ratio(
        med(find(Kind::Plain, 100), pullcheck),
        med(find(Kind::Plain, 1), pullcheck),
    );
    // A figure, not a target: the registry's own CPU per `HEAD` bounds it, not the client
    // (docs/performance.md).
    checks.push(Check {
        name: "plain HTTP: pullcheck 100 images / 1 image".into(),
        measured: format!("{r:.2}"),
        limit: "none (a figure)",
        pass: true,
    });
    for target in &targets {
        let max_token = usize::from(target.kind == Kind::Token);
        // The manifest HEAD goes first, anonymously until the registry's challenge is known: on
        // a registry that asks for credentials, each image that starts before the first 401 is
        // read sends one anonymous HEAD more (at most one per image, as containerd does).
        let challenged = target.kind != Kind::Plain;
        let mut pass = true;
        let mut measured = Vec::new();
        for case in cases
            .iter()
            .filter(|c| targets[c.target].kind == target.kind)
        {
            let c = case.counts[pullcheck];
            let heads_ok = if challenged {
                (case.images..=2 * case.images).contains(&c.head_manifest)
            } else {
                c.head_manifest == case.images
            };
            pass &= heads_ok
                && c.get_manifest == 0
                && c.other == 0
                && c.ping <= 1
                && c.token <= max_token;
            let extra = c.get_manifest + c.other;
            measured.push(format!(
                "{}: {}H+{}p+{}t{}",
                case.images,
                c.head_manifest,
                c.ping,
                c.token,
                if extra > 0 {
                    format!("+{extra}other")
                } else {
                    String::new()
                }
            ));
        }
        checks.push(Check {
            name: format!("requests of pullcheck, {}", target.label),
            measured: measured.join(", "),
            limit: match (challenged, max_token) {
                (false, _) => "N H + <=1 p + 0 t",
                (true, 1) => "N..2N H + <=1 p + <=1 t",
                (true, _) => "N..2N H + <=1 p + 0 t",
            },
            pass,
        });
    }
    for target in &targets {
        let rss = find(target.kind, 100).rss_kib[pullcheck];
        checks.push(Check {
            name: format!("peak RSS of pullcheck, 100 images, {}", target.label),
            measured: mib(rss),
            limit: "<= 12 MiB",
            pass: rss.is_some_and(|k| k as f64 * 1024.0 <= 12.0 * MIB),
        });
    }
    let dist = manifest_dir.join("dist/amd64/pullcheck");
    let sized = if dist.is_file() {
        dist
    } else {
        bench.bin.clone()
    };
    let size = fs::metadata(&sized).map_or(u64::MAX, |m| m.len());
    checks.push(Check {
        name: format!("binary size: {}", sized.display()),
        measured: format!("{:.2} MiB ({size} B)", size as f64 / MIB),
        limit: "<= 4 MiB",
        pass: size as f64 <= 4.0 * MIB,
    });

    println!();
    println!("== targets ==  (H = HEAD manifest, p = GET /v2/, t = token request; per run)");
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mwidth = checks.iter().map(|c| c.measured.len()).max().unwrap_or(0);
    for c in &checks {
        println!(
            "  {:<width$}  {:<mwidth$}  {:<19}  {}",
            c.name,
            c.measured,
            c.limit,
            if c.pass { "pass" } else { "FAIL" }
        );
    }
    println!(
        "  {} of {} pass",
        checks.iter().filter(|c| c.pass).count(),
        checks.len()
    );
    println!();
    println!(
        "load average at end: {}; whole run {:.1} s",
        loadavg(),
        started.elapsed().as_secs_f64()
    );
}
