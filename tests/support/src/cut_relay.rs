//! A loopback relay to an upstream server that a test can cut: every connection
//! through it is shut, and its port refuses new ones, as an S3 endpoint that becomes
//! unreachable in the middle of a run. Bytes pass through unchanged until then.

use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct CutRelay {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    cut: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl CutRelay {
    /// Relays to `upstream` (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str) -> CutRelay {
        CutRelay::start_on(upstream, "127.0.0.1:0")
    }

    /// The same relay again after a cut, on the same port: the endpoint is back.
    pub fn restore(&self, upstream: &str) -> CutRelay {
        CutRelay::start_on(upstream, self.url.trim_start_matches("http://"))
    }

    fn start_on(upstream: &str, address: &str) -> CutRelay {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind(address).unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cut = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (stop, kept) = (cut.clone(), streams.clone());
        std::thread::spawn(move || {
            // Dropping the listener when cut makes the port refuse connections.
            while !stop.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    Err(_) => break,
                };
                client.set_nonblocking(false).unwrap();
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut all = kept.lock().unwrap();
                if stop.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    break;
                }
                all.extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Write);
                    });
                }
            }
        });
        CutRelay { url, cut, streams }
    }

    /// Shuts every connection and refuses new ones from now on.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // The accept loop notices within its poll interval.
        std::thread::sleep(Duration::from_millis(50));
    }
}
