//! `Retry-After`, as a server that is rate limiting or overloaded sends it:
//! how long to wait before the next attempt.

use std::time::Duration;

/// Reads `Retry-After` in both of RFC 9110's forms: delta-seconds, or an
/// HTTP date (IMF-fixdate, RFC 850 or asctime), which becomes the time left
/// until it (zero when it has passed).
pub(crate) fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    retry_after_at(value.trim(), std::time::SystemTime::now())
}

/// `Retry-After` as seen at `now`.
fn retry_after_at(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        // `1e300` is finite yet no Duration: a server's header must not panic the run.
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after_at("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            ["-1", "1e300", "inf"].map(|v| retry_after_at(v, now)),
            [None; 3]
        );
        for date in [
            "Sun, 06 Nov 1994 08:49:47 GMT",
            "Sunday, 06-Nov-94 08:49:47 GMT",
            "Sun Nov  6 08:49:47 1994",
        ] {
            assert_eq!(
                retry_after_at(date, now),
                Some(Duration::from_secs(10)),
                "{date}"
            );
        }
        assert_eq!(
            retry_after_at("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_at("soon", now), None);
    }
}
