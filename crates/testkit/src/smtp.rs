//! A real SMTP server on `127.0.0.1:<free port>` that keeps what it receives, for the services that
//! send e-mail. It speaks enough of RFC 5321 for any client: `EHLO`/`HELO`, `MAIL FROM`,
//! `RCPT TO`, `DATA` (dot-unstuffed), `RSET`, `NOOP`, `QUIT`. A test can switch it off (the port
//! refuses connections, as with a server that is down) and on again (the same port) to see what
//! a sender does during an outage, or make it slow to accept each message, as with a congested
//! server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// One message as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub mail_from: String,
    pub rcpt_to: Vec<String>,
    /// Header and body, lines joined with CRLF, dot-stuffing removed.
    pub data: String,
}

impl Received {
    /// The value of the first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or("");
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if let Some(v) = value.as_mut() {
                if line.starts_with([' ', '\t']) {
                    v.push(' ');
                    v.push_str(line.trim());
                    continue;
                }
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case(name)
            {
                value = Some(v.trim().to_owned());
            }
        }
        value
    }
}

#[derive(Default)]
struct Shared {
    messages: Vec<Received>,
    connections: Vec<AbortHandle>,
    accept: Option<AbortHandle>,
    /// Pause between receiving a message and answering its `DATA`.
    data_delay: Duration,
}

pub struct SmtpServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl SmtpServer {
    /// Starts listening on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let server = Self {
            addr: listener.local_addr()?,
            shared: Arc::default(),
        };
        server.serve(listener);
        Ok(server)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `smtp://127.0.0.1:<port>`: plain SMTP, no authentication.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Every message received so far, in order.
    pub fn messages(&self) -> Vec<Received> {
        self.lock().messages.clone()
    }

    /// Waits until at least `count` messages have arrived or `timeout` passes; returns them all.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let messages = self.messages();
            if messages.len() >= count || tokio::time::Instant::now() >= deadline {
                return messages;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// From now on, waits `delay` after each message has arrived (it is already recorded) before
    /// answering that it was accepted.
    pub fn set_data_delay(&self, delay: Duration) {
        self.lock().data_delay = delay;
    }

    /// Stops listening and drops open connections: clients see connections refused.
    pub fn switch_off(&self) {
        let mut shared = self.lock();
        if let Some(accept) = shared.accept.take() {
            accept.abort();
        }
        for conn in shared.connections.drain(..) {
            conn.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn switch_on(&self) -> std::io::Result<()> {
        if self.lock().accept.is_some() {
            return Ok(());
        }
        // The aborted accept loop releases the old socket when it is dropped; retry briefly.
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(_) if tries < 50 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e),
            }
        };
        self.serve(listener);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn serve(&self, listener: TcpListener) {
        let shared = Arc::clone(&self.shared);
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let conversation = tokio::spawn(converse(stream, Arc::clone(&shared)));
                let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
                guard.connections.retain(|h| !h.is_finished());
                guard.connections.push(conversation.abort_handle());
            }
        });
        self.lock().accept = Some(accept.abort_handle());
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.switch_off();
    }
}

/// Longest line accepted (RFC 5321 allows 1000 octets for text lines; be generous).
const MAX_LINE: usize = 64 * 1024;

async fn converse(stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut reply = async |text: &str| write.write_all(format!("{text}\r\n").as_bytes()).await;
    if reply("220 testkit ESMTP ready").await.is_err() {
        return;
    }
    let mut mail_from: Option<String> = None;
    let mut rcpt_to: Vec<String> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(n) if n > MAX_LINE => {
                let _ = reply("500 line too long").await;
                return;
            }
            Ok(_) => {}
        }
        let command = line.trim_end_matches(['\r', '\n']);
        let verb = command
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let outcome = match verb.as_str() {
            "EHLO" => {
                reply("250-testkit greets you").await.ok();
                reply("250-8BITMIME").await.ok();
                reply("250-SMTPUTF8").await.ok();
                reply("250 SIZE 10485760").await
            }
            "HELO" => reply("250 testkit").await,
            "MAIL" => match path_argument(command, "FROM:") {
                Some(from) => {
                    mail_from = Some(from);
                    rcpt_to.clear();
                    reply("250 OK").await
                }
                None => reply("501 syntax: MAIL FROM:<address>").await,
            },
            "RCPT" => match (mail_from.is_some(), path_argument(command, "TO:")) {
                (false, _) => reply("503 MAIL first").await,
                (true, Some(to)) if !to.is_empty() => {
                    rcpt_to.push(to);
                    reply("250 OK").await
                }
                _ => reply("501 syntax: RCPT TO:<address>").await,
            },
            "DATA" => {
                let Some(from) = mail_from.clone().filter(|_| !rcpt_to.is_empty()) else {
                    if reply("503 MAIL and RCPT first").await.is_err() {
                        return;
                    }
                    continue;
                };
                if reply("354 end data with <CR><LF>.<CR><LF>").await.is_err() {
                    return;
                }
                let Some(data) = read_data(&mut reader).await else {
                    return;
                };
                let delay = {
                    let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    guard.messages.push(Received {
                        mail_from: from,
                        rcpt_to: std::mem::take(&mut rcpt_to),
                        data,
                    });
                    guard.data_delay
                };
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                mail_from = None;
                reply("250 OK: queued").await
            }
            "RSET" => {
                mail_from = None;
                rcpt_to.clear();
                reply("250 OK").await
            }
            "NOOP" => reply("250 OK").await,
            "QUIT" => {
                let _ = reply("221 bye").await;
                return;
            }
            "" => reply("500 empty command").await,
            _ => reply("502 command not implemented").await,
        };
        if outcome.is_err() {
            return;
        }
    }
}

/// The address in `MAIL FROM:<a>` / `RCPT TO:<a>` (parameters after it ignored).
fn path_argument(command: &str, keyword: &str) -> Option<String> {
    let rest = command.get(5..)?.trim_start();
    if !rest.to_ascii_uppercase().starts_with(keyword) {
        return None;
    }
    let rest = rest[keyword.len()..].trim_start();
    let inner = rest.strip_prefix('<')?;
    let end = inner.find('>')?;
    Some(inner[..end].to_owned())
}

/// Reads DATA up to the lone dot, undoing dot-stuffing; `None` if the client goes away.
async fn read_data<R: AsyncBufReadExt + Unpin>(reader: &mut R) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(n) if n > MAX_LINE => return None,
            Ok(_) => {}
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if text == "." {
            return Some(lines.join("\r\n"));
        }
        lines.push(text.strip_prefix('.').unwrap_or(text).to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn say(stream: &mut TcpStream, line: &str) -> String {
        stream
            .write_all(format!("{line}\r\n").as_bytes())
            .await
            .expect("write");
        read_reply(stream).await
    }

    async fn read_reply(stream: &mut TcpStream) -> String {
        let mut out = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            stream.read_exact(&mut byte).await.expect("read");
            out.push(byte[0]);
            // A reply ends with a line whose fourth character is a space.
            if out.ends_with(b"\r\n") {
                let text = String::from_utf8_lossy(&out).into_owned();
                let last = text
                    .trim_end()
                    .rsplit("\r\n")
                    .next()
                    .unwrap_or("")
                    .to_owned();
                if last.len() < 4 || last.as_bytes()[3] == b' ' {
                    return text;
                }
            }
        }
    }

    #[tokio::test]
    async fn speaks_smtp_and_records_messages() {
        let server = SmtpServer::start().await.expect("start");
        let mut s = TcpStream::connect(server.addr()).await.expect("connect");
        assert!(read_reply(&mut s).await.starts_with("220"));
        assert!(say(&mut s, "EHLO client").await.contains("250 SIZE"));
        assert!(
            say(&mut s, "RCPT TO:<b@example.com>")
                .await
                .starts_with("503")
        );
        assert!(
            say(&mut s, "MAIL FROM:<a@example.com> SIZE=10")
                .await
                .starts_with("250")
        );
        assert!(
            say(&mut s, "RCPT TO:<b@example.com>")
                .await
                .starts_with("250")
        );
        assert!(say(&mut s, "NOOP").await.starts_with("250"));
        assert!(say(&mut s, "DATA").await.starts_with("354"));
        let body = "Subject: hi\r\n\r\n..leading dot\r\nline\r\n.";
        assert!(say(&mut s, body).await.starts_with("250"));
        assert!(say(&mut s, "RSET").await.starts_with("250"));
        assert!(say(&mut s, "QUIT").await.starts_with("221"));
        let got = server.messages();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].mail_from, "a@example.com");
        assert_eq!(got[0].rcpt_to, vec!["b@example.com".to_owned()]);
        assert_eq!(got[0].data, "Subject: hi\r\n\r\n.leading dot\r\nline");
        assert_eq!(got[0].header("subject").as_deref(), Some("hi"));
    }

    #[tokio::test]
    async fn can_be_switched_off_and_on() {
        let server = SmtpServer::start().await.expect("start");
        server.switch_off();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(TcpStream::connect(server.addr()).await.is_err());
        server.switch_on().await.expect("listen again");
        let mut s = TcpStream::connect(server.addr()).await.expect("connect");
        assert!(read_reply(&mut s).await.starts_with("220"));
    }
}
