//! The kubelet's exec credential-provider plugins, end to end: a plugin written here (a shell
//! script, `standin/plugin.sh`) in a bin dir, a `CredentialProviderConfig`, and the real
//! Basic-auth registry on loopback. Matching, caching, failures, time-outs and garbage output;
//! the plugin's output (which holds the password, and on failure prints it to stderr and
//! stdout) never shows.

use crate::check::Run;
use crate::common::{ALICE, ALICE_PASSWORD, pullcheck, tls_basic_registry};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PLUGIN: &str = include_str!("standin/plugin.sh");

struct Plugin {
    dir: tempfile::TempDir,
    host: String,
}

impl Plugin {
    fn new() -> Plugin {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let script = bin.join("test-plugin");
        std::fs::write(&script, PLUGIN).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Plugin {
            dir,
            host: tls_basic_registry().host(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes the config: one provider `test-plugin` matching `matches`, run with `mode`,
    /// answering `cache_key_type` / `cache_duration` and an `auth` entry for `auth_key`.
    fn config(&self, matches: &str, mode: &str, extra: &str) -> PathBuf {
        let log = self.path("plugin.log");
        let text = format!(
            r#"apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: test-plugin
    matchImages: ["{matches}"]
    defaultCacheDuration: 1h
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["{mode}"]
    env:
      - name: PLUGIN_LOG
        value: "{}"
      - name: PLUGIN_USER
        value: "{ALICE}"
      - name: PLUGIN_PASSWORD
        value: "{ALICE_PASSWORD}"
{extra}"#,
            log.display()
        );
        let p = self.path("config.yaml");
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The requests the plugin received, one JSON per run.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("plugin.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn run(&self, config: &Path, env: &[(&str, String)], images: &[String]) -> (Run, Duration) {
        self.run_with(config, env, "off", images)
    }

    /// [`Plugin::run`] with `--cloud-credentials MODE`.
    fn run_with(
        &self,
        config: &Path,
        env: &[(&str, String)],
        mode: &str,
        images: &[String],
    ) -> (Run, Duration) {
        let term = self.path("termination-log");
        let (run, elapsed) = pullcheck()
            .without_env_prefix("PULLCHECK_")
            .arg("check")
            .args(["-o", "json", "--timeout", "6s", "--cloud-credentials", mode])
            .arg("--ca-file")
            .arg(tls_basic_registry().ca_pem_path().unwrap())
            .arg("--termination-log")
            .arg(&term)
            .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
            .arg("--image-credential-provider-config")
            .arg(config)
            .arg("--image-credential-provider-bin-dir")
            .arg(self.path("bin"))
            .env("HOME", self.dir.path())
            .env_remove("DOCKER_CONFIG")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(images)
            .run_timed();
        let termination = std::fs::read_to_string(&term).unwrap_or_default();
        let all = format!("{}\n{}\n{termination}", run.stdout, run.stderr);
        assert!(!all.contains(ALICE_PASSWORD), "leaked:\n{all}");
        assert!(!all.contains("plugin-said"), "plugin output shown:\n{all}");
        (run, elapsed)
    }

    fn image(&self, path: &str) -> String {
        format!("{}/{path}", self.host)
    }
}

fn response_env(key_type: &str, duration: &str, key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PLUGIN_CACHE_KEY_TYPE", key_type.to_string()),
        ("PLUGIN_CACHE_DURATION", duration.to_string()),
        ("PLUGIN_AUTH_KEY", key.to_string()),
    ]
}

#[test]
fn plugin_credentials_are_used_and_cached_per_registry() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/a", "v1");
    reg.push_oci_manifest("plugin/b", "v1");
    let p = Plugin::new();
    let config = p.config("127.0.0.*", "ok", "");
    // A pattern without a port does not match a host with one: the kubelet compares ports.
    let (run, _) = p.run(
        &config,
        &response_env("Registry", "1h", &p.host),
        &[p.image("plugin/a:v1")],
    );
    assert_eq!(run.code, 5, "{}", run.stdout);
    assert!(p.requests().is_empty());

    let config = p.config(&p.host, "ok", "");
    let images = [
        p.image("plugin/a:v1"),
        p.image("plugin/b:v1"),
        p.image("plugin/a:v9"),
    ];
    let (run, _) = p.run(&config, &response_env("Registry", "1h", &p.host), &images);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let a = run.image(&images[0]);
    assert_eq!(a["status"], "ok", "{a:#}");
    assert_eq!(
        a["auth"],
        format!("credential provider test-plugin ({})", p.host)
    );
    assert_eq!(run.image(&images[1])["status"], "ok");
    assert_eq!(run.image(&images[2])["reason"], "tag_missing");
    let requests = p.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0]["apiVersion"],
        "credentialprovider.kubelet.k8s.io/v1"
    );
    assert_eq!(requests[0]["kind"], "CredentialProviderRequest");
    assert!(
        requests[0]["image"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/plugin/", p.host)),
        "{requests:?}"
    );
}

#[test]
fn plugin_cache_key_image_and_zero_duration_run_it_per_image() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/c", "v1");
    reg.push_oci_manifest("plugin/d", "v1");
    let p = Plugin::new();
    let config = p.config(&p.host, "ok", "");
    let images = [p.image("plugin/c:v1"), p.image("plugin/d:v1")];
    let (run, _) = p.run(&config, &response_env("Image", "1h", &p.host), &images);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(p.requests().len(), 2);
    std::fs::remove_file(p.path("plugin.log")).unwrap();
    let (run, _) = p.run(&config, &response_env("Global", "0s", &p.host), &images);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(p.requests().len(), 2);
}

#[test]
fn plugin_auth_entries_match_the_image_as_the_kubelet_matches_them() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/e", "v1");
    let p = Plugin::new();
    let config = p.config(&p.host, "ok", "");
    // An auth key for another path prefix gives no credential for this image.
    let key = format!("{}/other", p.host);
    let image = p.image("plugin/e:v1");
    let (run, _) = p.run(
        &config,
        &response_env("Registry", "1h", &key),
        std::slice::from_ref(&image),
    );
    // The plugin gave nothing for it: a warning, since the kubelet runs the same plugin with
    // the node's identity.
    assert_eq!(run.code, 0, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["reason"], "no_credentials", "{r:#}");
    assert_eq!(r["not_counted"], "credential_provider_unavailable", "{r:#}");
    assert_eq!(
        r["providers_tried"][0]["provider"], "plugin test-plugin",
        "{r:#}"
    );
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("credential provider test-plugin gave no credential"),
        "{r:#}"
    );
    let key = format!("{}/plugin", p.host);
    let (run, _) = p.run(
        &config,
        &response_env("Registry", "1h", &key),
        std::slice::from_ref(&image),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn plugin_failures_are_provider_failed_naming_the_plugin_and_never_its_output() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/f", "v1");
    reg.push_oci_manifest("plugin/g", "v1");
    let p = Plugin::new();
    let images = [p.image("plugin/f:v1"), p.image("plugin/g:v1")];
    for (mode, why) in [
        ("fail", "it exited with exit status: 3"),
        (
            "garbage",
            "its output is not a CredentialProviderResponse (invalid at line 1 column",
        ),
        (
            "wrong-kind",
            "its output is not a CredentialProviderResponse (kind or apiVersion)",
        ),
    ] {
        let _ = std::fs::remove_file(p.path("plugin.log"));
        let config = p.config(&p.host, mode, "");
        let (run, _) = p.run(&config, &response_env("Registry", "1h", &p.host), &images);
        assert_eq!(run.code, 0, "{mode}: {}", run.stdout);
        for image in &images {
            let r = run.image(image);
            assert_eq!(r["status"], "unauthorized", "{r:#}");
            assert_eq!(r["reason"], "provider_failed", "{r:#}");
            assert_eq!(r["fatal"], false, "{r:#}");
            assert_eq!(r["not_counted"], "credential_provider_unavailable", "{r:#}");
            let msg = r["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!(
                    "the credential provider plugin test-plugin failed: {why}"
                )),
                "{mode}: {msg}"
            );
        }
        // Failed once, not run again for the second image.
        assert_eq!(p.requests().len(), 1, "{mode}");
    }
}

#[test]
fn a_failed_plugin_is_a_warning_named_in_the_summary_and_required_makes_it_fatal() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/w", "v1");
    let p = Plugin::new();
    let config = p.config(&p.host, "fail", "");
    let image = p.image("plugin/w:v1");
    let env = response_env("Registry", "1h", &p.host);
    let (run, _) = p.run(&config, &env, std::slice::from_ref(&image));
    assert_eq!(run.code, 0, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["fatal"], false, "{r:#}");
    assert_eq!(r["not_counted"], "credential_provider_unavailable", "{r:#}");
    let tried = &r["providers_tried"][0];
    assert_eq!(tried["provider"], "plugin test-plugin", "{r:#}");
    assert!(
        tried["why"]
            .as_str()
            .unwrap()
            .starts_with("it failed: it exited with exit status: 3"),
        "{r:#}"
    );
    let term = std::fs::read_to_string(p.path("termination-log")).unwrap();
    assert_eq!(
        term.lines().next(),
        Some(
            "pullcheck: no image failed; 1 image not verified (no credentials; not counted: the credential provider gave nothing in the pod, the node runs it with its own identity)"
        ),
        "{term}"
    );
    // Where every pod has what its plugins need, a failure of one is the pod's failure.
    let (run, _) = p.run_with(&config, &env, "required", std::slice::from_ref(&image));
    assert_eq!(run.code, 5, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["fatal"], true, "{r:#}");
    assert_eq!(r["reason"], "provider_failed", "{r:#}");
}

#[test]
fn a_hanging_plugin_is_cut_at_half_the_time_left() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/h", "v1");
    let p = Plugin::new();
    let config = p.config(&p.host, "hang", "");
    let image = p.image("plugin/h:v1");
    let (run, elapsed) = p.run(
        &config,
        &response_env("Registry", "1h", &p.host),
        std::slice::from_ref(&image),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["reason"], "provider_failed", "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("it did not answer within 3.0s"),
        "{r:#}"
    );
    // --timeout 6s: half for the plugin, then the verdict.
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
}

#[test]
fn plugin_token_attributes_pass_the_projected_service_account_token() {
    let reg = tls_basic_registry();
    reg.push_oci_manifest("plugin/t", "v1");
    let p = Plugin::new();
    let extra = "    tokenAttributes:\n      serviceAccountTokenAudience: registry.example\n      requireServiceAccount: true\n";
    let config = p.config(&p.host, "ok", extra);
    let image = p.image("plugin/t:v1");
    let tokens = p.path("tokens");
    let mut env = response_env("Registry", "1h", &p.host);
    env.push((
        "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR",
        tokens.to_str().unwrap().to_string(),
    ));
    // No token: the plugin is not run, and the verdict says how to add one.
    let (run, _) = p.run(&config, &env, std::slice::from_ref(&image));
    let r = run.image(&image);
    assert_eq!(r["reason"], "provider_failed", "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("pullcheck inject --credential-provider-config"),
        "{r:#}"
    );
    assert!(p.requests().is_empty());
    std::fs::create_dir_all(tokens.join("test-plugin")).unwrap();
    std::fs::write(tokens.join("test-plugin/token"), "sa-token-value\n").unwrap();
    let (run, _) = p.run(&config, &env, std::slice::from_ref(&image));
    assert_eq!(run.code, 0, "{}", run.stdout);
    let requests = p.requests();
    assert_eq!(requests[0]["serviceAccountToken"], "sa-token-value");
    assert!(!run.stdout.contains("sa-token-value"));
}

#[test]
fn a_config_without_bin_dir_or_plugin_is_a_usage_error() {
    let p = Plugin::new();
    let config = p.config(&p.host, "ok", "");
    let out = pullcheck()
        .args(["check", "--image-credential-provider-config"])
        .arg(&config)
        .arg(p.image("x:v1"))
        .run();
    assert_eq!(out.code, 2);
    let bad = p.path("bad.yaml");
    std::fs::write(&bad, "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: missing-plugin\n    matchImages: [x]\n    defaultCacheDuration: 1h\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n").unwrap();
    let out = pullcheck()
        .args(["check", "--image-credential-provider-config"])
        .arg(&bad)
        .arg("--image-credential-provider-bin-dir")
        .arg(p.path("bin"))
        .arg(p.image("x:v1"))
        .run();
    assert_eq!(out.code, 2);
    let stderr = out.stderr;
    assert!(
        stderr.contains("provider missing-plugin: no plugin"),
        "{stderr}"
    );
}

#[test]
fn the_start_check_reads_the_config_with_the_plugins_credential() {
    // The pull would use the plugin's credential, so the config read does too: a runAsNonRoot
    // container whose image runs as root is runs_as_root, as with the same credential in a
    // pull secret.
    let reg = tls_basic_registry();
    reg.push_image_with_config(
        "plugin/root",
        "v1",
        "linux/amd64",
        false,
        &crate::common::RunSettings::default(),
    );
    let p = Plugin::new();
    let config = p.config(&p.host, "ok", "");
    let image = p.image("plugin/root:v1");
    let mut env = response_env("Registry", "1h", &p.host);
    env.push((
        "PULLCHECK_CONTAINERS",
        format!(
            r#"[{{"name":"trainer","image":"{image}","command":true,"args":false,"runAsNonRoot":true}}]"#
        ),
    ));
    env.push(("PULLCHECK_PLATFORM", "linux/amd64".to_string()));
    let (run, _) = p.run(&config, &env, std::slice::from_ref(&image));
    assert_eq!(run.code, 7, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "wont_start", "{r:#}");
    assert_eq!(r["reason"], "runs_as_root", "{r:#}");
    assert_eq!(r["containers"][0]["reason"], "runs_as_root", "{r:#}");
}
