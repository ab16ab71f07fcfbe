//! The accept loop, with the timeouts `axum::serve` does not set.
//!
//! Without them a client that opens a connection and sends nothing, trickles its
//! headers a byte at a time, or stops reading a response, holds a socket and a task
//! for ever. So:
//!
//! - every connection is an [`IdleStream`], which fails with `TimedOut` once no byte
//!   has moved in either direction for the idle timeout (hyper then drops it); bytes
//!   flowing either way (a long download, a steady upload) keep it alive;
//! - hyper's header-read timeout bounds how long a request's head may take, however
//!   slowly it trickles;
//! - a request body that trickles on without end is stopped by the upload deadline
//!   (see `controllers::uploads`).
//!
//! On shutdown the loop stops accepting and lets the requests in flight finish.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// Serves `app` on `listener` until `shutdown` resolves, then waits for the
/// requests in flight. Connections idle for `idle` are closed, and a request's head
/// must arrive within `idle` too.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    idle: Duration,
    shutdown: impl Future<Output = ()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // HTTP/1.1 only, as before: every OCI client speaks it over plain TCP.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let io = TokioIo::new(IdleStream::new(stream, idle));
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// A failed accept: one client's trouble is skipped; running out of file
/// descriptors (or the like) waits a moment rather than spinning.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset | Interrupted
    ) {
        return;
    }
    tracing::warn!(error = %e, "accepting a connection failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// A TCP stream that fails with `TimedOut` after `idle` without progress.
pub struct IdleStream {
    inner: TcpStream,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl IdleStream {
    fn new(inner: TcpStream, idle: Duration) -> Self {
        IdleStream {
            inner,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    fn progressed(&mut self) {
        self.deadline.as_mut().reset(Instant::now() + self.idle);
    }

    /// Called when the inner stream is not ready: an error once the deadline passed.
    fn check_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(
                io::ErrorKind::TimedOut,
                "the connection was idle too long",
            )),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for IdleStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.progressed();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.check_idle(cx).map(Err),
        }
    }
}

impl AsyncWrite for IdleStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, data) {
            Poll::Ready(result) => {
                if matches!(result, Ok(n) if n > 0) {
                    self.progressed();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.check_idle(cx).map(Err),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => {
                if matches!(result, Ok(n) if n > 0) {
                    self.progressed();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.check_idle(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
