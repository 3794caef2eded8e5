//! stub
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodImage {
    pub image: String,
    pub origin: String,
}
#[derive(Debug, thiserror::Error)]
#[error("stub")]
pub struct PodSpecError;
pub fn images_from_manifests(_text: &str, _source: &str) -> Result<Vec<PodImage>, PodSpecError> {
    Ok(vec![])
}
