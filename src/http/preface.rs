//! Which protocol a connection speaks, told from the first bytes its client sends: the
//! HTTP/2 connection preface means prior-knowledge h2c, anything else HTTP/1. The bytes read
//! to decide are handed back to the protocol ahead of the rest of the stream ([`Opened`]),
//! so deciding costs one read and no waiting beyond the client's own bytes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// What a prior-knowledge HTTP/2 client sends first (RFC 9113, section 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A stream whose first bytes were read to choose the protocol; reads return them first.
#[derive(Debug)]
pub struct Opened<S> {
    inner: S,
    first: [u8; H2_PREFACE.len()],
    /// The next of `first` to hand out.
    at: usize,
    /// How many of `first` were read.
    len: usize,
}

impl<S> Opened<S> {
    /// Whether the client opened with the HTTP/2 preface.
    pub fn is_h2(&self) -> bool {
        self.first[..self.len] == H2_PREFACE[..]
    }
}

/// Reads from `inner` until its bytes either are the whole HTTP/2 preface or stop matching
/// it (or the client closes). A client that sends part of the preface and stalls waits here:
/// the caller bounds this with the header-read timeout.
pub async fn read_opening<S: AsyncRead + Unpin>(mut inner: S) -> io::Result<Opened<S>> {
    let mut first = [0_u8; H2_PREFACE.len()];
    let mut len = 0;
    while len < first.len() {
        let n = inner.read(&mut first[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
        if first[..len] != H2_PREFACE[..len] {
            break;
        }
    }
    Ok(Opened {
        inner,
        first,
        at: 0,
        len,
    })
}

impl<S: AsyncRead + Unpin> AsyncRead for Opened<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.len {
            let n = (self.len - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.first[at..at + n]);
            self.at += n;
            // What else has arrived comes with it, so the protocol's first read sees the
            // request as it would have without the opening read (hyper sizes its buffers by
            // what its reads return).
            if buf.remaining() > 0 {
                let _ = Pin::new(&mut self.inner).poll_read(cx, buf);
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Opened<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
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

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn opened_by(chunks: &[&[u8]]) -> (bool, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(64);
        let sent: Vec<u8> = chunks.concat();
        let chunks: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for chunk in chunks {
                client.write_all(&chunk).await.expect("write");
                tokio::task::yield_now().await;
            }
            client.shutdown().await.expect("shutdown");
        });
        let mut opened = read_opening(server).await.expect("opening");
        let h2 = opened.is_h2();
        let mut read = Vec::new();
        opened.read_to_end(&mut read).await.expect("rest");
        writer.await.expect("writer");
        assert_eq!(read, sent, "every byte reaches the protocol, in order");
        (h2, read)
    }

    #[tokio::test]
    async fn the_preface_in_pieces_is_h2_and_nothing_is_lost() {
        let (h2, _) = opened_by(&[b"PRI * HT", b"TP/2.0\r\n\r\nSM", b"\r\n\r\n", b"frames"]).await;
        assert!(h2);
    }

    #[tokio::test]
    async fn anything_else_is_http1_from_its_first_differing_byte() {
        let (h2, _) = opened_by(&[b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"]).await;
        assert!(!h2);
        let (h2, _) = opened_by(&[b"PRI * HTTP/1.1\r\n"]).await;
        assert!(!h2);
    }

    #[tokio::test]
    async fn a_client_that_closes_early_is_not_h2() {
        let (h2, read) = opened_by(&[b"PRI"]).await;
        assert!(!h2);
        assert_eq!(read, b"PRI");
        let (h2, read) = opened_by(&[]).await;
        assert!(!h2);
        assert!(read.is_empty());
    }
}
