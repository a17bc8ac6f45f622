//! Serde for a request's shared history, written as the plain list it holds.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::prompt::Message;

pub(super) fn serialize<S: Serializer>(
    messages: &Arc<Vec<Message>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    messages.as_slice().serialize(s)
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<Vec<Message>>, D::Error> {
    Vec::deserialize(d).map(Arc::new)
}
