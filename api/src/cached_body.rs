//! A body kept ready to send many times: its bytes, their gzip, and a strong
//! ETag for each encoding; answered with a 304 to an `If-None-Match` that
//! names either, and gzipped for clients that take it. The seat maps'
//! availability and layout and the page's assets all go out this way.

use std::io::Write as _;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::Digest as _;

#[derive(Debug)]
pub struct CachedBody {
    plain: Bytes,
    gzip: Bytes,
    /// Strong validators of the two representations (with and without gzip).
    etag: HeaderValue,
    gzip_etag: HeaderValue,
}

impl CachedBody {
    pub fn new(plain: Bytes, compression: flate2::Compression) -> Self {
        let digest = sha2::Sha256::digest(&plain);
        let hash: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), compression);
        // Writing to memory does not fail; an empty gzip is never sent (the
        // plain body goes instead).
        let gzip = encoder
            .write_all(&plain)
            .and_then(|()| encoder.finish())
            .unwrap_or_default();
        let tag = |suffix: &str| {
            HeaderValue::from_str(&format!("\"{hash}{suffix}\""))
                .unwrap_or(HeaderValue::from_static("\"\""))
        };
        Self {
            plain,
            gzip: Bytes::from(gzip),
            etag: tag(""),
            gzip_etag: tag("-gzip"),
        }
    }

    /// The plain representation's tag (the same bytes, the same tag).
    pub fn etag(&self) -> &HeaderValue {
        &self.etag
    }

    pub fn gzip_len(&self) -> usize {
        self.gzip.len()
    }

    /// The answer to a GET with these request headers.
    pub fn respond(
        &self,
        headers: &HeaderMap,
        content_type: &'static str,
        cache_control: &'static str,
    ) -> Response {
        let gzip = accepts_gzip(headers) && !self.gzip.is_empty();
        let etag = if gzip { &self.gzip_etag } else { &self.etag };
        let unchanged = if_none_match(headers)
            .any(|tag| tag == "*" || tag == self.etag || tag == self.gzip_etag);
        let mut response = if unchanged {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let body = if gzip { &self.gzip } else { &self.plain };
            let mut response = body.clone().into_response();
            let out = response.headers_mut();
            out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            if gzip {
                out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            response
        };
        let out = response.headers_mut();
        out.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        );
        out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        out.insert(header::ETAG, etag.clone());
        response
    }
}

/// The entity tags of `If-None-Match`, weak ones as strong (an
/// If-None-Match comparison is weak, RFC 9110 13.1.2).
fn if_none_match(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
}

/// Whether the client takes gzip (`Accept-Encoding`, a q of 0 refuses it).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn either_tag_is_unchanged_and_gzip_goes_to_those_who_take_it() {
        let body = CachedBody::new(Bytes::from(vec![b'a'; 4096]), flate2::Compression::fast());
        assert_eq!(
            body.etag(),
            CachedBody::new(Bytes::from(vec![b'a'; 4096]), flate2::Compression::best()).etag()
        );
        let plain = body.respond(&HeaderMap::new(), "text/plain", "no-cache");
        assert_eq!(plain.status(), 200);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let zipped = body.respond(
            &headers(&[("accept-encoding", "br, gzip;q=0.8")]),
            "text/plain",
            "no-cache",
        );
        assert_eq!(zipped.headers()[header::CONTENT_ENCODING], "gzip");
        let refused = body.respond(
            &headers(&[("accept-encoding", "gzip;q=0")]),
            "text/plain",
            "no-cache",
        );
        assert!(refused.headers().get(header::CONTENT_ENCODING).is_none());
        for tag in [
            plain.headers()[header::ETAG].clone(),
            zipped.headers()[header::ETAG].clone(),
        ] {
            let mut asked = HeaderMap::new();
            asked.insert(header::IF_NONE_MATCH, tag);
            assert_eq!(body.respond(&asked, "text/plain", "no-cache").status(), 304);
        }
    }
}
