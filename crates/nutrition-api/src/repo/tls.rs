//! TLS to Postgres as libpq does it under `sslmode=prefer` and `require`: encrypted, with neither
//! the certificate nor the host name checked, so no trust store is loaded either (OpenSSL's
//! default one costs about 1.3 MiB of memory that such a connection never reads).

use std::error::Error;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::ssl::{Ssl, SslContext, SslMethod, SslRef, SslVerifyMode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_openssl::SslStream;
use tokio_postgres::tls::{self, ChannelBinding, MakeTlsConnect, TlsConnect};

#[derive(Clone)]
pub struct Tls(SslContext);

impl Tls {
    pub fn new() -> Result<Self, ErrorStack> {
        let mut builder = SslContext::builder(SslMethod::tls_client())?;
        builder.set_verify(SslVerifyMode::NONE);
        Ok(Self(builder.build()))
    }
}

impl<S> MakeTlsConnect<S> for Tls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = Handshake;
    type Error = ErrorStack;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Handshake, ErrorStack> {
        let mut ssl = Ssl::new(&self.0)?;
        // libpq names the server (SNI) unless the host is an address.
        if domain.parse::<IpAddr>().is_err() {
            ssl.set_hostname(domain)?;
        }
        Ok(Handshake(ssl))
    }
}

pub struct Handshake(Ssl);

impl<S> TlsConnect<S> for Handshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = Box<dyn Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream<S>, Self::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let mut stream = SslStream::new(self.0, stream)?;
            Pin::new(&mut stream).connect().await?;
            Ok(TlsStream(stream))
        })
    }
}

pub struct TlsStream<S>(SslStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tls::TlsStream for TlsStream<S> {
    /// SCRAM's channel binding (`tls-server-end-point`), which libpq uses when the server offers
    /// it: the hash of the server's certificate, SHA-256 in place of MD5 and SHA-1 (RFC 5929).
    fn channel_binding(&self) -> ChannelBinding {
        server_end_point(self.0.ssl())
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

fn server_end_point(ssl: &SslRef) -> Option<Vec<u8>> {
    let cert = ssl.peer_certificate()?;
    let algorithms = cert
        .signature_algorithm()
        .object()
        .nid()
        .signature_algorithms()?;
    let digest = match algorithms.digest {
        Nid::MD5 | Nid::SHA1 => MessageDigest::sha256(),
        nid => MessageDigest::from_nid(nid)?,
    };
    cert.digest(digest).ok().map(|d| d.to_vec())
}
