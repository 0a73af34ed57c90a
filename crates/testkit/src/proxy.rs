//! A TCP relay between a service and its database that a test can cut and restore, to see what
//! the service does when the database goes away without stopping the shared database server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

pub struct TcpProxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl TcpProxy {
    /// Starts relaying `127.0.0.1:<free port>` to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let up = Arc::new(AtomicBool::new(true));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accept = {
            let up = Arc::clone(&up);
            let connections = Arc::clone(&connections);
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !up.load(Ordering::SeqCst) {
                        // Refuse like a stopped server: close at once.
                        drop(inbound);
                        continue;
                    }
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    if let Ok(mut list) = connections.lock() {
                        list.retain(|h| !h.is_finished());
                        list.push(task.abort_handle());
                    }
                }
            })
            .abort_handle()
        };
        Ok(Self {
            addr,
            up,
            connections,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cuts every open connection and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        if let Ok(mut list) = self.connections.lock() {
            for handle in list.drain(..) {
                handle.abort();
            }
        }
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}
