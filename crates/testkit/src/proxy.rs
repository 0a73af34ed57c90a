//! A TCP relay between a service and its database that a test can cut and restore, to see what
//! the service does when the database goes away without stopping the shared database server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

pub struct TcpProxy {
    addr: SocketAddr,
    statements: Arc<AtomicU64>,
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
        let statements: Arc<AtomicU64> = Arc::default();
        let accept = {
            let statements = Arc::clone(&statements);
            let up = Arc::clone(&up);
            let connections = Arc::clone(&connections);
            tokio::spawn(async move {
                while let Ok((inbound, _)) = listener.accept().await {
                    if !up.load(Ordering::SeqCst) {
                        // Refuse like a stopped server: close at once.
                        drop(inbound);
                        continue;
                    }
                    let statements = Arc::clone(&statements);
                    let task = tokio::spawn(async move {
                        if let Ok(outbound) = TcpStream::connect(upstream).await {
                            relay(inbound, outbound, &statements).await;
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
            statements,
            up,
            connections,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many statements the clients have sent to Postgres so far: the protocol's `Query` and
    /// `Execute` messages, one per statement run (preparing one is not counted). Readable only
    /// on connections without TLS (`sslmode=disable`); encrypted traffic counts nothing.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::SeqCst)
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

/// Copies both ways, reading the messages the client sends as it passes them on.
async fn relay(inbound: TcpStream, outbound: TcpStream, statements: &AtomicU64) {
    let (mut from_client, mut to_client) = inbound.into_split();
    let (mut from_server, mut to_server) = outbound.into_split();
    let down = async {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    let up = async {
        let mut reader = MessageReader::default();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let found = reader.feed(&buf[..n]);
            statements.fetch_add(found, Ordering::SeqCst);
            if to_server.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_server.shutdown().await;
    };
    tokio::join!(down, up);
}

/// Splits the client's side of the Postgres protocol into messages: untyped start-up packets
/// (length first) until the start-up message itself, then a type byte and a length each.
#[derive(Default)]
struct MessageReader {
    typed: bool,
    header: Vec<u8>,
    /// Bytes of the current message's body still to pass.
    skip: usize,
}

impl MessageReader {
    /// Consumes `bytes`; returns how many `Query` or `Execute` messages began in them.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        let mut found = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let header_len = if self.typed { 5 } else { 8 };
            let n = (header_len - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() < header_len {
                break;
            }
            let at = usize::from(self.typed);
            let len = u32::from_be_bytes([
                self.header[at],
                self.header[at + 1],
                self.header[at + 2],
                self.header[at + 3],
            ]) as usize;
            if self.typed {
                if matches!(self.header[0], b'Q' | b'E') {
                    found += 1;
                }
                self.skip = len.saturating_sub(4);
            } else {
                // Protocol 3.0's start-up message; SSL and GSS requests come before it.
                let code = u32::from_be_bytes([
                    self.header[4],
                    self.header[5],
                    self.header[6],
                    self.header[7],
                ]);
                self.skip = len.saturating_sub(8);
                self.typed = code == 0x0003_0000;
            }
            self.header.clear();
        }
        found
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_query_and_execute_messages_across_reads() {
        let mut stream = Vec::new();
        // Start-up: length 12, protocol 3.0, four bytes of parameters.
        stream.extend_from_slice(&12u32.to_be_bytes());
        stream.extend_from_slice(&0x0003_0000u32.to_be_bytes());
        stream.extend_from_slice(b"u\0x\0");
        let mut typed = |kind: u8, body: &[u8]| {
            stream.push(kind);
            stream.extend_from_slice(&(u32::try_from(body.len()).unwrap_or(0) + 4).to_be_bytes());
            stream.extend_from_slice(body);
        };
        typed(b'P', b"\0SELECT 'E'\0\0\0");
        typed(b'B', b"\0\0\0\0\0\0\0");
        typed(b'E', b"\0\0\0\0\0");
        typed(b'S', b"");
        typed(b'Q', b"SELECT 1\0");
        typed(b'X', b"");
        for chunk in [1, 3, 7, stream.len()] {
            let mut reader = MessageReader::default();
            let found: u64 = stream.chunks(chunk).map(|c| reader.feed(c)).sum();
            assert_eq!(found, 2, "read {chunk} bytes at a time");
        }
    }
}
