//! The accept loop: HTTP/1.1 connections served by hyper with the defences against slow and
//! greedy clients that `axum::serve` does not offer: at most `max_connections` served at once
//! (more wait in the kernel's backlog), request headers within `header_timeout` (hyper's
//! timer, which also runs while a kept-alive connection waits for its next request), and no
//! connection on which nothing moves either way for `idle_timeout` while no request of it is
//! being handled (a client that stops reading its response, or sends nothing). The body
//! deadline is a layer of the router. Shutdown waits for requests in flight at most
//! [`SHUTDOWN_GRACE`].

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tower::{Service, ServiceExt};

/// How long shutdown waits for connections still busy (a handler stuck, a client that does not
/// read) before it gives up on them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How the server treats connections.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` completes, then lets requests in flight
/// finish (idle connections close at once) and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::pin!(shutdown);
    loop {
        // A slot first: past the cap, connections wait in the backlog, unaccepted.
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and the like: wait, never spin.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = match make_service.call(peer).await {
            Ok(service) => service,
            Err(never) => match never {},
        };
        let limits = limits.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _permit = permit;
            serve_connection(stream, service, &limits, &mut stop).await;
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a slot until it ends: all slots back means all are done.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    if tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            busy = limits.max_connections.max(1) - slots.available_permits(),
            "connections still busy after the shutdown grace period: left behind"
        );
    }
    Ok(())
}

async fn serve_connection<S>(
    stream: TcpStream,
    service: S,
    limits: &ServeLimits,
    stop: &mut watch::Receiver<bool>,
) where
    S: Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let started = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Watched {
        inner: stream,
        started,
        last: last.clone(),
    });
    // Requests being handled: the idle watchdog leaves a connection alone while one is.
    let busy = Arc::new(AtomicU64::new(0));
    let counted = busy.clone();
    let hyper_service = TowerToHyperService::new(
        service
            .map_request(|request: hyper::Request<Incoming>| request.map(axum::body::Body::new))
            .map_future(move |future| {
                let guard = Busy::enter(counted.clone());
                async move {
                    let response = future.await;
                    drop(guard);
                    response
                }
            }),
    );
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, hyper_service).with_upgrades();
    tokio::pin!(connection);
    let mut watchdog = tokio::time::interval(Duration::from_secs(1).min(limits.idle_timeout));
    let mut stopping = *stop.borrow();
    if stopping {
        connection.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            changed = stop.changed(), if !stopping => {
                if changed.is_err() || *stop.borrow() {
                    stopping = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
            _ = watchdog.tick() => {
                let quiet = started.elapsed().saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
                if quiet >= limits.idle_timeout && busy.load(Ordering::Relaxed) == 0 {
                    tracing::debug!(idle_secs = quiet.as_secs(), "idle connection closed");
                    return;
                }
            }
        }
    }
}

/// One request being handled, counted while it lives (also when its future is dropped).
struct Busy(Arc<AtomicU64>);

impl Busy {
    fn enter(count: Arc<AtomicU64>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Busy(count)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A socket that records when a byte last moved, for the idle watchdog.
struct Watched {
    inner: TcpStream,
    started: Instant,
    /// Milliseconds since `started`.
    last: Arc<AtomicU64>,
}

impl Watched {
    fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
