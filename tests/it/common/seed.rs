//! Deterministic image fixtures, pushed through the registry API (blob upload POST + PUT,
//! manifest PUT), as the registry's configured user: Basic auth, or a `pull,push` token from its
//! token server ([`Registry::push_authorization`]).
//!
//! Every fixture depends only on its platform string, so digests are the same on every run and
//! in every repository.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::registry::Registry;

/// Media types.
pub mod media {
    pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
    pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
    pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
    pub const DOCKER_MANIFEST_LIST: &str =
        "application/vnd.docker.distribution.manifest.list.v2+json";
    pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
    pub const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
    pub const IN_TOTO: &str = "application/vnd.in-toto+json";

    /// An `Accept` header value with all four manifest types.
    pub const ACCEPT_ALL: &str = "application/vnd.oci.image.index.v1+json, \
        application/vnd.oci.image.manifest.v1+json, \
        application/vnd.docker.distribution.manifest.list.v2+json, \
        application/vnd.docker.distribution.manifest.v2+json";
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A pushed index or manifest list and its children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedIndex {
    /// Digest of the index / list itself.
    pub digest: String,
    /// `(platform as given, child manifest digest)`, in order.
    pub children: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Oci,
    Docker,
}

impl Flavor {
    fn manifest_type(self) -> &'static str {
        match self {
            Flavor::Oci => media::OCI_MANIFEST,
            Flavor::Docker => media::DOCKER_MANIFEST,
        }
    }
    fn index_type(self) -> &'static str {
        match self {
            Flavor::Oci => media::OCI_INDEX,
            Flavor::Docker => media::DOCKER_MANIFEST_LIST,
        }
    }
    fn config_type(self) -> &'static str {
        match self {
            Flavor::Oci => media::OCI_CONFIG,
            Flavor::Docker => media::DOCKER_CONFIG,
        }
    }
    fn layer_type(self) -> &'static str {
        match self {
            Flavor::Oci => media::OCI_LAYER_GZIP,
            Flavor::Docker => media::DOCKER_LAYER_GZIP,
        }
    }
}

/// `os/arch[/variant]`, as in `linux/arm64/v8`.
struct Platform {
    os: String,
    architecture: String,
    variant: Option<String>,
}

impl Platform {
    fn parse(s: &str) -> Platform {
        let mut parts = s.split('/');
        let os = parts.next().filter(|p| !p.is_empty());
        let architecture = parts.next().filter(|p| !p.is_empty());
        let (Some(os), Some(architecture)) = (os, architecture) else {
            panic!("platform {s:?}: expected os/arch[/variant]");
        };
        Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            variant: parts.next().map(str::to_string),
        }
    }

    fn is_unknown(&self) -> bool {
        self.os == "unknown" && self.architecture == "unknown"
    }

    fn to_json(&self) -> Value {
        let mut p = json!({ "architecture": self.architecture, "os": self.os });
        if let Some(v) = &self.variant {
            p["variant"] = json!(v);
        }
        p
    }
}

/// A manifest ready to PUT, with the blobs it references.
struct Fixture {
    media_type: &'static str,
    manifest: Vec<u8>,
    blobs: Vec<Vec<u8>>,
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({ "mediaType": media_type, "digest": sha256_digest(bytes), "size": bytes.len() })
}

/// The runtime part of an image config (`config.User`, `config.Entrypoint`, `config.Cmd`), each
/// left out when `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings {
    pub user: Option<String>,
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
}

impl RunSettings {
    /// `User` set (empty string included), `Cmd: ["/hello"]`.
    pub fn user(user: &str) -> RunSettings {
        RunSettings {
            user: Some(user.to_string()),
            entrypoint: None,
            cmd: Some(vec!["/hello".to_string()]),
        }
    }

    fn to_json(&self) -> Value {
        let mut c = json!({});
        if let Some(u) = &self.user {
            c["User"] = json!(u);
        }
        if let Some(e) = &self.entrypoint {
            c["Entrypoint"] = json!(e);
        }
        if let Some(cmd) = &self.cmd {
            c["Cmd"] = json!(cmd);
        }
        c
    }
}

/// A runnable-looking image: config JSON with the platform, one gzip'd tar layer with one file.
fn image_fixture(flavor: Flavor, platform: &Platform) -> Fixture {
    image_fixture_with(flavor, platform, None)
}

/// [`image_fixture`] with the config's runtime part given (default: `{"Cmd": ["/hello"]}`).
fn image_fixture_with(flavor: Flavor, platform: &Platform, run: Option<&RunSettings>) -> Fixture {
    let name = format!(
        "{}/{}{}",
        platform.os,
        platform.architecture,
        platform
            .variant
            .as_deref()
            .map(|v| format!("/{v}"))
            .unwrap_or_default()
    );
    let tar = tar_one_file(
        "hello.txt",
        format!("pullcheck test layer for {name}\n").as_bytes(),
    );
    let layer = gzip_stored(&tar);
    let mut config = json!({
        "architecture": platform.architecture,
        "os": platform.os,
        "config": run.map_or_else(|| json!({ "Cmd": ["/hello"] }), RunSettings::to_json),
        "rootfs": { "type": "layers", "diff_ids": [sha256_digest(&tar)] },
        "history": [{ "created_by": "pullcheck test fixture" }],
    });
    if let Some(v) = &platform.variant {
        config["variant"] = json!(v);
    }
    let config = serde_json::to_vec(&config).expect("config JSON");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": flavor.manifest_type(),
        "config": descriptor(flavor.config_type(), &config),
        "layers": [descriptor(flavor.layer_type(), &layer)],
    });
    Fixture {
        media_type: flavor.manifest_type(),
        manifest: serde_json::to_vec_pretty(&manifest).expect("manifest JSON"),
        blobs: vec![config, layer],
    }
}

/// A buildkit-style attestation manifest (platform unknown/unknown, one in-toto layer).
fn attestation_fixture(flavor: Flavor, subject: Option<&str>) -> Fixture {
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": "https://spdx.dev/Document",
        "subject": [{
            "name": "pullcheck-test-fixture",
            "digest": { "sha256": subject.and_then(|d| d.strip_prefix("sha256:")).unwrap_or("") },
        }],
        "predicate": { "spdxVersion": "SPDX-2.3", "name": "pullcheck-test-fixture" },
    });
    let statement = serde_json::to_vec(&statement).expect("in-toto JSON");
    let config = json!({
        "architecture": "unknown",
        "os": "unknown",
        "config": {},
        "rootfs": { "type": "layers", "diff_ids": [sha256_digest(&statement)] },
    });
    let config = serde_json::to_vec(&config).expect("config JSON");
    let mut layer = descriptor(media::IN_TOTO, &statement);
    layer["annotations"] = json!({ "in-toto.io/predicate-type": "https://spdx.dev/Document" });
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": flavor.manifest_type(),
        "config": descriptor(flavor.config_type(), &config),
        "layers": [layer],
    });
    Fixture {
        media_type: flavor.manifest_type(),
        manifest: serde_json::to_vec_pretty(&manifest).expect("manifest JSON"),
        blobs: vec![config, statement],
    }
}

impl Registry {
    /// Pushes an OCI image manifest (linux/amd64: config + one small layer) as `repo:tag`.
    /// Returns the manifest digest the registry reported (`Docker-Content-Digest`).
    pub fn push_oci_manifest(&self, repo: &str, tag: &str) -> String {
        let fixture = image_fixture(Flavor::Oci, &Platform::parse("linux/amd64"));
        self.push_fixture(repo, tag, &fixture)
    }

    /// Pushes a Docker schema 2 image manifest (linux/amd64) as `repo:tag`.
    pub fn push_docker_schema2(&self, repo: &str, tag: &str) -> String {
        let fixture = image_fixture(Flavor::Docker, &Platform::parse("linux/amd64"));
        self.push_fixture(repo, tag, &fixture)
    }

    /// Pushes an OCI image index as `repo:tag`, its per-platform OCI manifests first (by digest).
    /// Platforms are `os/arch[/variant]`; `unknown/unknown` gives a buildkit-style attestation
    /// manifest (annotations `vnd.docker.reference.type: attestation-manifest` and
    /// `vnd.docker.reference.digest: <first real platform's manifest>`).
    pub fn push_oci_index(&self, repo: &str, tag: &str, platforms: &[&str]) -> String {
        self.push_oci_index_detailed(repo, tag, platforms).digest
    }

    /// Pushes a Docker manifest list as `repo:tag`, its schema 2 children first (by digest).
    /// `unknown/unknown` entries are built like in [`Registry::push_oci_index`].
    pub fn push_docker_manifest_list(&self, repo: &str, tag: &str, platforms: &[&str]) -> String {
        self.push_docker_manifest_list_detailed(repo, tag, platforms)
            .digest
    }

    /// [`Registry::push_oci_index`], also returning each child's digest.
    pub fn push_oci_index_detailed(
        &self,
        repo: &str,
        tag: &str,
        platforms: &[&str],
    ) -> PushedIndex {
        self.push_index(Flavor::Oci, repo, tag, platforms)
    }

    /// [`Registry::push_docker_manifest_list`], also returning each child's digest.
    pub fn push_docker_manifest_list_detailed(
        &self,
        repo: &str,
        tag: &str,
        platforms: &[&str],
    ) -> PushedIndex {
        self.push_index(Flavor::Docker, repo, tag, platforms)
    }

    /// Pushes a single image manifest (OCI, or Docker schema 2 with `docker`) for `platform`,
    /// whose config has these runtime settings.
    pub fn push_image_with_config(
        &self,
        repo: &str,
        tag: &str,
        platform: &str,
        docker: bool,
        run: &RunSettings,
    ) -> String {
        let flavor = if docker { Flavor::Docker } else { Flavor::Oci };
        let fixture = image_fixture_with(flavor, &Platform::parse(platform), Some(run));
        self.push_fixture(repo, tag, &fixture)
    }

    /// Pushes an OCI index whose children's configs all have these runtime settings.
    pub fn push_oci_index_with_config(
        &self,
        repo: &str,
        tag: &str,
        platforms: &[&str],
        run: &RunSettings,
    ) -> PushedIndex {
        self.push_index_with(Flavor::Oci, repo, tag, platforms, Some(run), &|_| {})
    }

    fn push_index(&self, flavor: Flavor, repo: &str, tag: &str, platforms: &[&str]) -> PushedIndex {
        self.push_index_with(flavor, repo, tag, platforms, None, &|_| {})
    }

    /// [`Registry::push_oci_index`] with its entries edited before the index is pushed (an
    /// entry without `platform`, one with `os.features`): the children are pushed as built.
    pub fn push_oci_index_edited(
        &self,
        repo: &str,
        tag: &str,
        platforms: &[&str],
        edit: &dyn Fn(&mut [Value]),
    ) -> String {
        self.push_index_with(Flavor::Oci, repo, tag, platforms, None, edit)
            .digest
    }

    fn push_index_with(
        &self,
        flavor: Flavor,
        repo: &str,
        tag: &str,
        platforms: &[&str],
        run: Option<&RunSettings>,
        edit: &dyn Fn(&mut [Value]),
    ) -> PushedIndex {
        let parsed: Vec<Platform> = platforms.iter().map(|p| Platform::parse(p)).collect();
        // Real images first: attestations point at one of them.
        let mut children: Vec<Option<(Value, String)>> = vec![None; parsed.len()];
        let mut first_image: Option<String> = None;
        for (i, platform) in parsed.iter().enumerate() {
            if platform.is_unknown() {
                continue;
            }
            let fixture = image_fixture_with(flavor, platform, run);
            let digest = self.push_fixture(repo, &sha256_digest(&fixture.manifest), &fixture);
            let mut entry = descriptor(fixture.media_type, &fixture.manifest);
            entry["platform"] = platform.to_json();
            first_image.get_or_insert_with(|| digest.clone());
            children[i] = Some((entry, digest));
        }
        for (i, platform) in parsed.iter().enumerate() {
            if !platform.is_unknown() {
                continue;
            }
            let fixture = attestation_fixture(flavor, first_image.as_deref());
            let digest = self.push_fixture(repo, &sha256_digest(&fixture.manifest), &fixture);
            let mut entry = descriptor(fixture.media_type, &fixture.manifest);
            entry["platform"] = platform.to_json();
            let mut annotations = json!({ "vnd.docker.reference.type": "attestation-manifest" });
            if let Some(subject) = &first_image {
                annotations["vnd.docker.reference.digest"] = json!(subject);
            }
            entry["annotations"] = annotations;
            children[i] = Some((entry, digest));
        }
        let (mut entries, digests): (Vec<Value>, Vec<String>) = children
            .into_iter()
            .map(|c| c.expect("every child built"))
            .unzip();
        edit(&mut entries);
        let index = json!({
            "schemaVersion": 2,
            "mediaType": flavor.index_type(),
            "manifests": entries,
        });
        let fixture = Fixture {
            media_type: flavor.index_type(),
            manifest: serde_json::to_vec_pretty(&index).expect("index JSON"),
            blobs: Vec::new(),
        };
        let digest = self.push_fixture(repo, tag, &fixture);
        PushedIndex {
            digest,
            children: platforms
                .iter()
                .map(|p| p.to_string())
                .zip(digests)
                .collect(),
        }
    }

    /// Uploads the fixture's blobs, then PUTs its manifest as `repo:reference`.
    /// Pushes a Helm chart as `repo:tag`, the way `helm push` stores one: an OCI manifest whose
    /// config is `application/vnd.cncf.helm.config.v1+json` (an artifact, not an image).
    pub fn push_helm_chart(&self, repo: &str, tag: &str) -> String {
        let config = br#"{"name":"chart","version":"0.1.0","apiVersion":"v2"}"#.to_vec();
        let chart = b"not really a tgz, but a blob all the same".to_vec();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": descriptor("application/vnd.cncf.helm.config.v1+json", &config),
            "layers": [descriptor("application/vnd.cncf.helm.chart.content.v1.tar+gzip", &chart)],
        });
        let fixture = Fixture {
            media_type: "application/vnd.oci.image.manifest.v1+json",
            manifest: serde_json::to_vec_pretty(&manifest).expect("manifest JSON"),
            blobs: vec![config, chart],
        };
        self.push_fixture(repo, tag, &fixture)
    }

    fn push_fixture(&self, repo: &str, reference: &str, fixture: &Fixture) -> String {
        let client = self.http_client();
        let base = self.base_url();
        let authorization = self.push_authorization(repo);
        let auth = |req: reqwest::RequestBuilder| match &authorization {
            Some(value) => req.header("Authorization", value.as_str()),
            None => req,
        };
        super::block_on(async {
            for blob in &fixture.blobs {
                let digest = sha256_digest(blob);
                let resp = auth(client.post(format!("{base}/v2/{repo}/blobs/uploads/")))
                    .send()
                    .await
                    .expect("POST blob upload");
                assert_eq!(
                    resp.status().as_u16(),
                    202,
                    "POST {repo} blob upload: {resp:?}"
                );
                let location = resp
                    .headers()
                    .get("Location")
                    .and_then(|v| v.to_str().ok())
                    .expect("upload Location header")
                    .to_string();
                let location = if location.starts_with('/') {
                    format!("{base}{location}")
                } else {
                    location
                };
                let sep = if location.contains('?') { '&' } else { '?' };
                let resp = auth(client.put(format!("{location}{sep}digest={digest}")))
                    .header("Content-Type", "application/octet-stream")
                    .body(blob.clone())
                    .send()
                    .await
                    .expect("PUT blob");
                assert_eq!(
                    resp.status().as_u16(),
                    201,
                    "PUT {repo} blob {digest}: {resp:?}"
                );
            }
            let resp = auth(client.put(format!("{base}/v2/{repo}/manifests/{reference}")))
                .header("Content-Type", fixture.media_type)
                .body(fixture.manifest.clone())
                .send()
                .await
                .expect("PUT manifest");
            let status = resp.status().as_u16();
            let digest = resp
                .headers()
                .get("Docker-Content-Digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = resp.text().await.unwrap_or_default();
            assert_eq!(status, 201, "PUT {repo}:{reference} manifest: {body}");
            let digest = digest.expect("Docker-Content-Digest on manifest PUT");
            assert_eq!(
                digest,
                sha256_digest(&fixture.manifest),
                "registry digest differs from the pushed bytes' digest"
            );
            digest
        })
    }
}

/// A ustar archive holding one regular file.
fn tar_one_file(name: &str, content: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    let put = |header: &mut [u8; 512], at: usize, field: &[u8]| {
        header[at..at + field.len()].copy_from_slice(field);
    };
    put(&mut header, 0, name.as_bytes());
    put(&mut header, 100, b"0000644\0");
    put(&mut header, 108, b"0000000\0");
    put(&mut header, 116, b"0000000\0");
    put(
        &mut header,
        124,
        format!("{:011o}\0", content.len()).as_bytes(),
    );
    put(&mut header, 136, b"00000000000\0");
    put(&mut header, 148, b"        ");
    header[156] = b'0';
    put(&mut header, 257, b"ustar\0");
    put(&mut header, 263, b"00");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    put(&mut header, 148, format!("{sum:06o}\0 ").as_bytes());

    let mut tar = header.to_vec();
    tar.extend_from_slice(content);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    tar.resize(tar.len() + 1024, 0);
    tar
}

/// A valid gzip stream of `data` using deflate "stored" blocks (no compression crate needed).
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let len = u16::try_from(chunk.len()).expect("chunk fits u16");
        out.push(u8::from(last));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
