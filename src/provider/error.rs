//! Why a request failed ([`ProviderError`]), each error's failure kind and
//! whether a retry may help, and how a reqwest error is classified.

use std::time::Duration;

use crate::failure::FailureKind;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The connection failed or broke.
    #[error("connection error: {0}")]
    Connection(String),
    /// No complete answer within the timeout.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The server answered with an error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
        /// The server's `Retry-After`, when given.
        retry_after: Option<Duration>,
    },
    /// The body was not the expected JSON.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The replay transcript has no answer for this request.
    #[error("no recorded answer: {0}")]
    NotRecorded(String),
    /// The request could not be built (configuration).
    #[error("{0}")]
    Config(String),
    /// An `exec` model's program could not start or ended with an error.
    #[error("program failed: {0}")]
    Program(String),
    /// The response body ran past the model's `max_response_bytes`.
    #[error("the response body is over the limit of {limit} bytes (max_response_bytes)")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// An image of the request is no longer the file that was loaded:
    /// other bytes, gone, or no regular file.
    #[error("{0}")]
    ImageChanged(String),
    /// The request asked for log-probabilities and the answer had none.
    #[error("{0}")]
    NoLogprobs(String),
    /// Continuations were to be scored and the server returned no
    /// log-probabilities for the prompt (llama.cpp's llama-server).
    #[error("{0}")]
    NoPromptLogprobs(String),
}

impl ProviderError {
    /// Whether a retry may succeed: connection errors, timeouts, 429, 5xx, truncated bodies.
    pub fn retryable(&self) -> bool {
        match self {
            ProviderError::Connection(_)
            | ProviderError::Timeout(_)
            | ProviderError::Malformed(_) => true,
            ProviderError::Status { status, .. } => {
                *status == 429 || *status == 408 || *status >= 500
            }
            ProviderError::NotRecorded(_)
            | ProviderError::Config(_)
            | ProviderError::Program(_)
            | ProviderError::TooLarge { .. }
            | ProviderError::ImageChanged(_)
            | ProviderError::NoLogprobs(_)
            | ProviderError::NoPromptLogprobs(_) => false,
        }
    }

    /// The server's requested delay, for 429s.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The failure a record of this error holds: timeout, server_error, rate_limited, ...
    pub fn kind(&self) -> FailureKind {
        match self {
            ProviderError::Connection(_) => FailureKind::ConnectionError,
            ProviderError::Timeout(_) => FailureKind::Timeout,
            ProviderError::Status { status: 429, .. } => FailureKind::RateLimited,
            ProviderError::Status { status, .. } if *status >= 500 => FailureKind::ServerError,
            ProviderError::Status { .. } => FailureKind::ClientError,
            ProviderError::Malformed(_) => FailureKind::MalformedResponse,
            ProviderError::NotRecorded(_) => FailureKind::NotRecorded,
            ProviderError::Config(_) => FailureKind::ConfigError,
            ProviderError::Program(_) => FailureKind::ProgramError,
            ProviderError::TooLarge { .. } => FailureKind::ResponseTooLarge,
            ProviderError::ImageChanged(_) => FailureKind::ImageChanged,
            ProviderError::NoLogprobs(_) => FailureKind::NoLogprobs,
            ProviderError::NoPromptLogprobs(_) => FailureKind::NoPromptLogprobs,
        }
    }
}

/// Maps a reqwest error onto our classification.
pub(crate) fn classify(err: &reqwest::Error, timeout: Duration) -> ProviderError {
    if err.is_timeout() {
        ProviderError::Timeout(timeout)
    } else if err.is_decode() || err.is_body() {
        ProviderError::Malformed(err.to_string())
    } else {
        ProviderError::Connection(error_chain(err))
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
