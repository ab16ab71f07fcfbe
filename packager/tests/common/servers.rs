//! Real registries on 127.0.0.1 for the publish tests: CNCF Distribution (Debian's
//! `docker-registry`) and our own `stackpack-registry`; and a fault-injecting proxy
//! that stands in for a registry failing mid-upload (named as such: it forwards to a
//! real registry and answers one chosen request with a 500).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on 127.0.0.1:{port}");
}

/// CNCF Distribution 2.8, started from Debian's `docker-registry`.
pub struct Distribution {
    child: Child,
    pub port: u16,
    _data: tempfile::TempDir,
}

impl Distribution {
    pub fn start() -> Distribution {
        let data = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = data.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                data.path().join("storage").display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("`docker-registry` (Debian package docker-registry) must be installed: run scripts/install-test-deps.sh");
        wait_for(port);
        Distribution {
            child,
            port,
            _data: data,
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The built `stackpack-registry` binary, beside `stackpack`.
pub fn registry_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_stackpack"))
        .parent()
        .unwrap()
        .join("stackpack-registry");
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "stackpack-registry",
                "--bin",
                "stackpack-registry",
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }
    path
}

/// Our registry, with a publisher token.
pub struct OurRegistry {
    child: Child,
    pub port: u16,
    pub data: tempfile::TempDir,
    pub publisher_token: String,
}

impl OurRegistry {
    pub fn start() -> OurRegistry {
        let data = tempfile::tempdir().unwrap();
        let binary = registry_binary();
        let output = Command::new(&binary)
            .args(["token", "create", "--role", "publisher", "--json", "--data"])
            .arg(data.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let created: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let publisher_token = created["token"].as_str().unwrap().to_string();
        let port = free_port();
        let child = Command::new(&binary)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(data.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(port);
        OurRegistry {
            child,
            port,
            data,
            publisher_token,
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for OurRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
                        method,
                        path_contains,
                        fail_nth,
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

/// One connection: read each request head, answer 500 when it is the chosen one,
/// else forward it with `Connection: close` so the next request comes on a new
/// connection and is inspected too.
fn serve(
    mut client: TcpStream,
    upstream: u16,
    method: &str,
    path_contains: &str,
    fail_nth: usize,
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
        client.write_all(
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 69\r\nConnection: close\r\n\r\n{\"errors\":[{\"code\":\"UNKNOWN\",\"message\":\"injected failure\",\"detail\":0}]}",
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
