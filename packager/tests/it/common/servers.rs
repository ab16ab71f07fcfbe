//! Real registries on 127.0.0.1 for the publish tests: CNCF Distribution (Debian's
//! `docker-registry`) and our own `stackpack-registry`; and a fault-injecting proxy
//! that stands in for a registry failing mid-upload (named as such: it forwards to a
//! real registry and answers one chosen request with a 500, or another refusal).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub use stackpack_test_support::servers::{
    free_port, wait_for_port as wait_for, Distribution, OurRegistry,
};

/// A proxy in front of a real registry that answers the `fail_nth` request matching
/// `method` and `path_contains` with `500 Internal Server Error` and forwards every
/// other request untouched. It stands in for a registry failing mid-upload, a
/// failure no real registry here can be asked to produce on cue.
pub struct FaultProxy {
    pub port: u16,
    pub failures: Arc<AtomicUsize>,
}

impl FaultProxy {
    pub fn start(
        upstream: u16,
        method: &'static str,
        path_contains: &'static str,
        fail_nth: usize,
    ) -> FaultProxy {
        FaultProxy::answering(
            upstream,
            method,
            path_contains,
            fail_nth,
            "500 Internal Server Error",
            r#"{"errors":[{"code":"UNKNOWN","message":"injected failure","detail":0}]}"#,
        )
    }

    /// As [`FaultProxy::start`], answering the chosen request with `status` (`409
    /// Conflict`, say) and the JSON `body`: a registry refusing a request on its merits.
    pub fn answering(
        upstream: u16,
        method: &'static str,
        path_contains: &'static str,
        fail_nth: usize,
        status: &'static str,
        body: &'static str,
    ) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let failures = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(0));
        let failures_in = failures.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let seen = seen.clone();
                let failures = failures_in.clone();
                std::thread::spawn(move || {
                    let _ = serve(
                        client,
                        upstream,
                        (method, path_contains, fail_nth),
                        (status, body),
                        &seen,
                        &failures,
                    );
                });
            }
        });
        FaultProxy { port, failures }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// One connection: read each request head, answer `status` when it is the chosen one,
/// else forward it with `Connection: close` so the next request comes on a new
/// connection and is inspected too.
fn serve(
    mut client: TcpStream,
    upstream: u16,
    (method, path_contains, fail_nth): (&str, &str, usize),
    (status, body): (&str, &str),
    seen: &AtomicUsize,
    failures: &AtomicUsize,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or("");
    let matches = request_line.starts_with(method) && request_line.contains(path_contains);
    if matches && seen.fetch_add(1, Ordering::SeqCst) + 1 == fail_nth {
        failures.fetch_add(1, Ordering::SeqCst);
        // Take the whole body first, as a registry does before it answers: a client
        // still writing a large body would otherwise see a reset, not the 500.
        let length = text
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<u64>().ok())?
            })
            .unwrap_or(0);
        std::io::copy(&mut (&mut client).take(length), &mut std::io::sink())?;
        client.write_all(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )?;
        return Ok(());
    }
    let mut rewritten = String::new();
    for line in text.split("\r\n") {
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        rewritten.push_str(line);
        rewritten.push_str("\r\n");
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    server.write_all(rewritten.as_bytes())?;
    let mut server_reader = server.try_clone()?;
    let mut client_writer = client.try_clone()?;
    let down = std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_reader, &mut client_writer);
        let _ = client_writer.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut client, &mut server);
    let _ = down.join();
    Ok(())
}
