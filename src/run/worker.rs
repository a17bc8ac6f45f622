//! What one of a model's workers holds: its model and judge, the model's
//! queue, the specs, the journal writer's channel, the stop flag, the cache
//! and the budget meter. The scheduler runs workers; a batched model's one
//! task (`batch.rs`) holds the same, so both name it here.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::SpecRuntime;
use super::budget::Meter;
use super::queue::Tasks;
use super::record::Record;
use crate::client::ModelClient;
use crate::client::cache::Cache;

/// One of a model's workers: pulls tasks from the model's queue until it is
/// empty or the run stops, and sends each finished record to the writer.
pub(super) struct Worker {
    pub index: usize,
    pub model: Arc<ModelClient>,
    pub judge: Option<Arc<ModelClient>>,
    pub queue: Arc<Mutex<Tasks>>,
    pub specs: Vec<Arc<SpecRuntime>>,
    pub tx: mpsc::Sender<(usize, Record)>,
    pub stop: Arc<AtomicBool>,
    pub cache: Option<Arc<Cache>>,
    pub meter: Arc<Meter>,
    /// Whether any answer of this worker's model carried log-probabilities
    /// (shared by the model's workers).
    pub gave_logprobs: Arc<AtomicBool>,
    /// The refusal that stopped the run, set by the worker that met it.
    pub refused: Arc<Mutex<Option<super::RunError>>>,
}
