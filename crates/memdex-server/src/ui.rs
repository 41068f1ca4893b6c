//! The memory inspector page at `/ui`: plain HTML, CSS and one script (`ui/`), embedded in
//! the binary, no toolchain and nothing fetched from elsewhere. The page holds no data: it
//! asks for a key (when the server has keys), keeps it in the tab's session storage and
//! calls the documented API with it (`Authorization: Bearer`), so it sees exactly what the
//! key may see. Its files are public, answered with a strict Content-Security-Policy (only
//! this server's script and style; no inline script, no frames) as a second guard behind the
//! script's own escaping (it writes user text with `textContent` only).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::AppState;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");

/// The page's own paths (public: they carry no data).
pub(crate) fn is_page(path: &str) -> bool {
    path == "/" || path == "/ui" || path.starts_with("/ui/")
}

/// The page's routes, or none (`memdex serve --no-ui`).
pub(crate) fn routes(on: bool) -> Router<AppState> {
    if !on {
        return Router::new();
    }
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui") }))
        .route(
            "/ui",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/ui/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
}

/// What every file of the page is sent with: no inline script or style, nothing from another
/// origin, no framing (the page can forget memories: no clickjacking), no MIME sniffing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(body: &'static str, kind: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    (headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_runs_no_inline_script() {
        for (name, text) in [
            ("index.html", INDEX),
            ("app.js", SCRIPT),
            ("app.css", STYLE),
        ] {
            // the SVG namespace is a name, not a place
            let text = text.replace("'http://www.w3.org/2000/svg'", "");
            for far in ["http://", "https://", "//cdn", "@import", "url("] {
                assert!(!text.contains(far), "{name} names {far:?}");
            }
        }
        // one script, from this server; no inline handlers
        assert_eq!(INDEX.matches("<script").count(), 1, "{INDEX}");
        assert!(INDEX.contains(r#"<script src="/ui/app.js" defer></script>"#));
        for handler in ["onclick=", "onload=", "onerror=", "onsubmit="] {
            assert!(!INDEX.contains(handler), "inline {handler}");
        }
        // user text is never parsed as HTML by the script
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!SCRIPT.contains(sink), "app.js uses {sink}");
        }
    }

    #[test]
    fn page_paths_are_the_ui_and_the_root() {
        assert!(is_page("/ui") && is_page("/ui/") && is_page("/ui/app.js") && is_page("/"));
        assert!(!is_page("/uix") && !is_page("/v1/tenants") && !is_page("/metrics"));
    }
}
