//! Serving a router on a loopback listener, and stopping it within a bound.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::body::{RequestBody, Response};
use crate::router::{Request, Router};

/// How long the accept loop pauses after an accept error that is not about one connection
/// (say, out of file descriptors), so it does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A router being served on a loopback port.
///
/// Dropping it stops accepting and lets the connections finish their answers in flight
/// (without waiting for them); [`Server::shutdown`] also waits for them, at most its grace.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Server {
    /// Bind `addr` (loopback only: `InvalidInput` otherwise) and serve `router` on it.
    pub async fn bind<S>(addr: SocketAddr, router: Router<S>) -> io::Result<Server>
    where
        S: Clone + Send + Sync + 'static,
    {
        ensure_loopback(addr)?;
        Server::start(TcpListener::bind(addr).await?, router)
    }

    /// Serve `router` on `listener`, which must be bound to a loopback address.
    pub fn start<S>(listener: TcpListener, router: Router<S>) -> io::Result<Server>
    where
        S: Clone + Send + Sync + 'static,
    {
        let local_addr = listener.local_addr()?;
        ensure_loopback(local_addr)?;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, Arc::new(router), stopped));
        Ok(Server {
            local_addr,
            stop,
            task: Some(task),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stop accepting, close idle connections, and wait at most `grace` for the answers in
    /// flight; those still running then are dropped with their connections.
    pub async fn shutdown(mut self, grace: Duration) {
        self.stop.send_replace(true);
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(grace, &mut task).await.is_err()
        {
            // The accept loop owns every connection task: aborting it ends them all.
            task.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

fn ensure_loopback(addr: SocketAddr) -> io::Result<()> {
    if addr.ip().to_canonical().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("loopback-http serves loopback addresses only, not {addr}"),
        ))
    }
}

async fn accept_loop<S>(
    listener: TcpListener,
    router: Arc<Router<S>>,
    mut stopped: watch::Receiver<bool>,
) where
    S: Clone + Send + Sync + 'static,
{
    let mut connections = JoinSet::new();
    let for_connections = stopped.clone();
    loop {
        tokio::select! {
            // A dropped sender also stops the loop.
            () = stop_requested(&mut stopped) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    connections.spawn(connection(tcp, peer, router.clone(), for_connections.clone()));
                }
                Err(e) if is_connection_error(&e) => {}
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Errors about one connection that was reset before it was accepted; the next accept is fine.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

async fn connection<S>(
    tcp: TcpStream,
    peer: SocketAddr,
    router: Arc<Router<S>>,
    mut stopped: watch::Receiver<bool>,
) where
    S: Clone + Send + Sync + 'static,
{
    // TCP_NODELAY: an event written on an open stream otherwise waits for the client's delayed
    // ACK of the one before (Nagle; some 40 ms on Linux). The doubles send each byte when they
    // mean to.
    let _ = tcp.set_nodelay(true);
    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let router = router.clone();
        async move {
            let (parts, body) = request.into_parts();
            let request = Request::new(parts, RequestBody::new(body), peer);
            Ok::<Response, Infallible>(router.dispatch(request).await)
        }
    });
    let served = http1::Builder::new().serve_connection(TokioIo::new(tcp), service);
    let mut served = std::pin::pin!(served);
    tokio::select! {
        // A connection error only ends this connection.
        _ = served.as_mut() => return,
        () = stop_requested(&mut stopped) => {}
    }
    served.as_mut().graceful_shutdown();
    let _ = served.await;
}

/// Resolves once a stop is asked for, or the [`Server`] is gone.
async fn stop_requested(stopped: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`: dropped here, before any other await.
    let _ = stopped.wait_for(|stop| *stop).await.is_ok();
}
