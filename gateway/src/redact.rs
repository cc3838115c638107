//! Finds a backend's address in free text, in the spellings that leak it: the exact origin or
//! authority, the bare host (`10.0.0.5`, `db.internal`), the same host on another port, the other
//! loopback spellings of a loopback backend (`localhost:PORT`, `[::1]:PORT`, `127.0.0.1`), any
//! `host:PORT` with the backend's port, the backend's interface paths, and all of these
//! percent-encoded (once or more) or in another letter case.
//!
//! Cards are built by allow-listing fields (see [`crate::card`]); this is the second line for the
//! free text the gateway still publishes (names, descriptions, tags, examples, input schemas): a
//! word that names the backend becomes `[redacted]`.

use std::borrow::Cow;

use reqwest::Url;

/// What replaces a word that names a backend.
pub const REDACTED: &str = "[redacted]";

/// The address forms of one backend.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    /// Dotted names and IP literals, lower case: found wherever they stand as a whole name.
    hosts: Vec<String>,
    /// Single-label names (`echo`, `backend`): found only as an authority (`echo:8000`, `//echo`).
    labels: Vec<String>,
    ports: Vec<u16>,
    /// Interface paths longer than `/`, lower case.
    paths: Vec<String>,
}

const LOOPBACK: [&str; 5] = ["127.0.0.1", "localhost", "::1", "0.0.0.0", "localhost.localdomain"];

impl Redactor {
    /// The address forms of the backend reached at `urls` (its configured URL, its card's interface
    /// URLs).
    pub fn new<'a>(urls: impl IntoIterator<Item = &'a str>) -> Redactor {
        let mut redactor = Redactor::default();
        for url in urls {
            let Ok(url) = Url::parse(url) else { continue };
            if let Some(host) = url.host_str() {
                redactor.add_host(host);
            }
            if let Some(port) = url.port_or_known_default().filter(|p| *p != 80 && *p != 443)
                && !redactor.ports.contains(&port)
            {
                redactor.ports.push(port);
            }
            let path = url.path().trim_end_matches('/').to_ascii_lowercase();
            if path.len() > 1 && !redactor.paths.contains(&path) {
                redactor.paths.push(path);
            }
        }
        redactor
    }

    fn add_host(&mut self, host: &str) {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let loopback = LOOPBACK.contains(&host.as_str()) || host.starts_with("127.");
        let mut names = vec![host];
        if loopback {
            names.extend(LOOPBACK.iter().map(|h| h.to_string()));
        }
        for name in names {
            let list = if name.contains('.') || name.contains(':') || name == "localhost" {
                &mut self.hosts
            } else {
                &mut self.labels
            };
            if !list.contains(&name) {
                list.push(name);
            }
        }
    }

    /// Whether `n` is one of the backend's ports.
    pub fn is_port(&self, n: u64) -> bool {
        self.ports.iter().any(|p| u64::from(*p) == n)
    }

    /// Whether `text`, in any of its decodings, names the backend.
    pub fn mentions(&self, text: &str) -> bool {
        decodings(text).iter().any(|form| self.mentions_plain(form))
    }

    fn mentions_plain(&self, text: &str) -> bool {
        self.hosts.iter().any(|h| find_name(text, h))
            || self.labels.iter().any(|l| find_label(text, l))
            || self.ports.iter().any(|p| find_port(text, *p))
            || self.paths.iter().any(|p| text.contains(p.as_str()))
    }

    /// `text` with each whitespace-separated word that names the backend replaced by
    /// [`REDACTED`]; the whole text when the address spans words.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self.mentions(text) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        for word in text.split_inclusive(char::is_whitespace) {
            let bare = word.trim_end_matches(char::is_whitespace);
            if self.mentions(bare) {
                out.push_str(REDACTED);
                out.push_str(&word[bare.len()..]);
            } else {
                out.push_str(word);
            }
        }
        if self.mentions(&out) { Cow::Borrowed(REDACTED) } else { Cow::Owned(out) }
    }
}

/// `text` lower-cased, then percent-decoded and unescaped again and again while that changes it.
fn decodings(text: &str) -> Vec<String> {
    let mut forms = vec![text.to_lowercase()];
    for _ in 0..4 {
        let last = forms.last().map(String::as_str).unwrap_or_default();
        let next = percent_decode(last).replace("\\/", "/");
        if next == last {
            break;
        }
        forms.push(next.to_lowercase());
    }
    forms
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) =
                bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// `name` standing as a whole name in `text`: not inside a longer name or number.
fn find_name(text: &str, name: &str) -> bool {
    let v6 = name.contains(':');
    let bytes = text.as_bytes();
    text.match_indices(name).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + name.len()).copied();
        let joins = |c: u8| if v6 { c.is_ascii_hexdigit() || c == b':' } else { is_name_char(c) || c == b'.' };
        let after_joins = |c: u8| {
            if v6 {
                c.is_ascii_hexdigit() || c == b':' && bytes.get(at + name.len() + 1).is_some_and(u8::is_ascii_hexdigit)
            } else {
                is_name_char(c) || c == b'.' && bytes.get(at + name.len() + 1).is_some_and(|n| is_name_char(*n))
            }
        };
        !before.is_some_and(joins) && !after.is_some_and(after_joins)
    })
}

/// A single-label `name` used as an authority: `name:digits`, `//name`, `@name`.
fn find_label(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(name).any(|(at, _)| {
        let end = at + name.len();
        if bytes.get(end).is_some_and(|c| is_name_char(*c)) || at > 0 && is_name_char(bytes[at - 1]) {
            return false;
        }
        let port = bytes.get(end) == Some(&b':') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        let authority = text[..at].ends_with("//") || text[..at].ends_with('@');
        port || authority
    })
}

/// `:port` after a name or `]` (an authority with the backend's port, whatever its host).
fn find_port(text: &str, port: u16) -> bool {
    let needle = format!(":{port}");
    let bytes = text.as_bytes();
    text.match_indices(&needle).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + needle.len());
        before.is_some_and(|c| is_name_char(c) || c == b']' || c == b'.') && !after.is_some_and(u8::is_ascii_digit)
    })
}

/// For other modules' tests: the same decoding the redactor uses.
#[cfg(test)]
pub mod tests_support {
    pub fn percent_decode(text: &str) -> String {
        super::percent_decode(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Redactor {
        Redactor::new(["http://127.0.0.1:8123", "http://127.0.0.1:8123/a2a/jsonrpc"])
    }

    #[test]
    fn finds_every_spelling_of_a_loopback_backend() {
        let r = loopback();
        for leak in [
            "http://127.0.0.1:8123/x",
            "localhost:8123",
            "LOCALHOST:9999",
            "[::1]:8123",
            "::1",
            "at 127.0.0.1",
            "127.0.0.1:22",
            "http%3A%2F%2F127.0.0.1%3A8123",
            "127%2E0%2E0%2E1",
            "http%253A%252F%252Flocalhost%253A8123",
            "myhost:8123",
            "see /a2a/jsonrpc",
            "http:\\/\\/localhost",
        ] {
            assert!(r.mentions(leak), "{leak}");
        }
        for fine in ["Echoes text", "version 1.0.0", "port 8123 is a number", "127.0.0.10", "a2a", "x:81234"] {
            assert!(!r.mentions(fine), "{fine}");
        }
    }

    #[test]
    fn single_label_hosts_only_as_authorities() {
        let r = Redactor::new(["http://echo:8000"]);
        assert!(r.mentions("http://echo/x") && r.mentions("echo:8000") && r.mentions("echo:9"));
        assert!(!r.mentions("Echo") && !r.mentions("echoes the text") && !r.mentions("echo"));
    }

    #[test]
    fn redacts_words_and_keeps_the_rest() {
        let r = Redactor::new(["http://10.0.0.5:8000"]);
        assert_eq!(r.redact("docs at http://10.0.0.5:8000/docs now"), "docs at [redacted] now");
        assert_eq!(r.redact("plain"), "plain");
        assert_eq!(r.redact("db.10.0.0.5"), "db.10.0.0.5", "another name that ends alike");
    }
}
