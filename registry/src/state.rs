//! What every handler shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use stackpack_schema::digest::Sha256Hasher;

use crate::config::Config;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::storage::BlobStore;

/// The running hash of one upload session, kept between its requests. `None` when a
/// request failed half way or the server restarted: the file is then hashed again.
#[derive(Default)]
pub struct UploadProgress {
    pub hasher: Option<Sha256Hasher>,
}

pub struct AppState {
    pub config: Config,
    pub db: Db,
    /// Where blob bytes live: the data folder, or an S3 bucket.
    pub blobs: Arc<dyn BlobStore>,
    pub metrics: Arc<Metrics>,
    uploads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<UploadProgress>>>>,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    pub fn new(config: Config, db: Db, blobs: Arc<dyn BlobStore>, metrics: Arc<Metrics>) -> Self {
        AppState {
            config,
            db,
            blobs,
            metrics,
            uploads: Mutex::new(HashMap::new()),
        }
    }

    /// The lock of one upload session; requests on the same session run one by one.
    pub fn upload_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<UploadProgress>> {
        self.uploads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone()
    }

    pub fn forget_upload(&self, id: &str) {
        self.uploads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}
