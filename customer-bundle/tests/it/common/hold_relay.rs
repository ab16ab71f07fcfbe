//! Our registry, seen through a loopback relay that adds a `hold` to each
//! assignment the registry answers with, as the registry does when a customer's
//! forecast replaces or destroys resources. The registry's side of that is built
//! apart from the runner's; until the two meet, this relay stands in for it, and
//! everything else the runner reads or sends is the registry's own (statements,
//! receipts, sync reports).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub struct HoldRelay {
    /// `127.0.0.1:PORT`, as `[sync] registry` takes it (with a namespace).
    pub host: String,
    words: Arc<Mutex<Option<String>>>,
}

impl HoldRelay {
    /// Relays to the registry at `upstream` (`127.0.0.1:PORT`), one request per
    /// connection.
    pub fn start(upstream: String) -> HoldRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let words: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let shared = words.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let hold = shared.lock().unwrap().clone();
                relay(client, &upstream, hold.as_deref());
            }
        });
        HoldRelay { host, words }
    }

    /// From now on every assignment carries `words` as its hold (`None`: as the
    /// registry sent it).
    pub fn hold(&self, words: Option<&str>) {
        *self.words.lock().unwrap() = words.map(str::to_string);
    }
}

fn relay(mut client: TcpStream, upstream: &str, hold: Option<&str>) {
    let Some((head, body)) = read_request(&mut client) else {
        return;
    };
    let mut lines: Vec<&str> = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    lines.push("Connection: close");
    let path = lines[0].split(' ').nth(1).unwrap_or_default().to_string();
    let mut server = TcpStream::connect(upstream).unwrap();
    server
        .write_all(format!("{}\r\n\r\n", lines.join("\r\n")).as_bytes())
        .unwrap();
    server.write_all(&body).unwrap();
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).unwrap();
    let split = find(&answer, b"\r\n\r\n").expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let mut body = answer[split + 4..].to_vec();
    let mut headers: Vec<&str> = head.split("\r\n").collect();
    let status = headers.remove(0);
    if headers
        .iter()
        .any(|h| h.eq_ignore_ascii_case("transfer-encoding: chunked"))
    {
        body = dechunk(&body);
    }
    if let (Some(words), true, true) = (
        hold,
        path.ends_with("/assignment"),
        status.contains(" 200 "),
    ) {
        let mut response: serde_json::Value = serde_json::from_slice(&body).unwrap();
        for assignment in response["assignments"].as_array_mut().unwrap() {
            assignment["hold"] = serde_json::json!(words);
        }
        body = serde_json::to_vec(&response).unwrap();
    }
    let kept: Vec<&str> = headers
        .into_iter()
        .filter(|h| {
            let h = h.to_ascii_lowercase();
            !["content-length:", "transfer-encoding:", "connection:"]
                .iter()
                .any(|name| h.starts_with(name))
        })
        .collect();
    let mut out = format!("{status}\r\n");
    for header in kept {
        out.push_str(&format!("{header}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    client.write_all(out.as_bytes()).unwrap();
    client.write_all(&body).unwrap();
}

/// The head (without its blank line) and the body of one request.
fn read_request(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    let split = loop {
        if let Some(at) = find(&data, b"\r\n\r\n") {
            break at;
        }
        let n = client.read(&mut buffer).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&data[..split]).to_string();
    let length: usize = head
        .split("\r\n")
        .find_map(|h| {
            let (name, value) = h.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = data[split + 4..].to_vec();
    while body.len() < length {
        let n = client.read(&mut buffer).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buffer[..n]);
    }
    Some((head, body))
}

fn find(data: &[u8], what: &[u8]) -> Option<usize> {
    data.windows(what.len()).position(|w| w == what)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = find(data, b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..end]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
    out
}
