//! Response bodies read under a size cap, answers and error pages alike.
//!
//! A server (or whatever answers at its address) may send a body without
//! end, with a 200 or a 500. The request's timeout does not stop it soon
//! enough: at loopback speed a body fills gigabytes before any timeout.
//! So every body is read chunk by chunk and counted, and one past the
//! model's `max_response_bytes` ends the request as
//! [`ProviderError::TooLarge`], which is never retried: the same server
//! sends the same body again.

use std::time::Duration;

use super::{ProviderError, classify, parse_retry_after};

/// The default most bytes of one response body: 64 MiB, far above any
/// answer a model writes (a 128k-token answer is well under 1 MiB).
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// How much of an error body is kept for its message (the record keeps 300
/// characters of it); the rest is counted against the cap, not kept.
const ERROR_KEEP: usize = 64 << 10;

/// Counts a body's bytes against its cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cap {
    /// The most bytes allowed.
    limit: u64,
    /// The request's timeout, for classifying a read that timed out.
    timeout: Duration,
    seen: u64,
}

impl Cap {
    /// A fresh count for one response.
    pub(crate) fn new(limit: u64, timeout: Duration) -> Cap {
        Cap {
            limit,
            timeout,
            seen: 0,
        }
    }

    /// Fails before any byte is read when the announced length is over the cap.
    fn check_announced(&self, response: &reqwest::Response) -> Result<(), ProviderError> {
        match response.content_length() {
            Some(len) if len > self.limit => Err(self.too_large()),
            _ => Ok(()),
        }
    }

    /// The next chunk of `response`, counted; `None` at the end.
    pub(crate) async fn next(
        &mut self,
        response: &mut reqwest::Response,
    ) -> Result<Option<bytes::Bytes>, ProviderError> {
        if self.seen == 0 {
            self.check_announced(response)?;
        }
        let chunk = response
            .chunk()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
        if let Some(chunk) = &chunk {
            self.seen = self.seen.saturating_add(chunk.len() as u64);
            if self.seen > self.limit {
                return Err(self.too_large());
            }
        }
        Ok(chunk)
    }

    fn too_large(&self) -> ProviderError {
        ProviderError::TooLarge { limit: self.limit }
    }
}

/// The whole body of `response`, at most `cap.limit` bytes.
pub(crate) async fn read(
    mut response: reqwest::Response,
    mut cap: Cap,
) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    while let Some(chunk) = cap.next(&mut response).await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error of a response with an error status: its status, `Retry-After`
/// and the start of its body. A body past the cap is [`ProviderError::TooLarge`].
pub(crate) async fn error_status(mut response: reqwest::Response, mut cap: Cap) -> ProviderError {
    let status = response.status().as_u16();
    let retry_after = parse_retry_after(response.headers());
    let mut kept = Vec::new();
    loop {
        match cap.next(&mut response).await {
            Ok(Some(chunk)) => {
                let room = ERROR_KEEP.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
            }
            Err(e @ ProviderError::TooLarge { .. }) => return e,
            // A body that breaks off or stalls still says what the status does.
            Ok(None) | Err(_) => break,
        }
    }
    let body = String::from_utf8_lossy(&kept);
    ProviderError::Status {
        status,
        body: crate::text::clip(body.trim(), 300),
        retry_after,
    }
}
