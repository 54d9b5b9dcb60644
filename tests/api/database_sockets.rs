//! The server's PostgreSQL connections send each message whole at once: their sockets
//! have `TCP_NODELAY` set (the patched `vendor/sqlx-core`). Without it, over TLS, a message
//! over one record (16 KiB) left its second record waiting for PostgreSQL's delayed
//! acknowledgement of the first, up to 40 ms. SQLite has no sockets.
//!
//! The test finds the process's TCP sockets connected to the test database's port and reads
//! the option on a duplicate of each (`pidfd_getfd`): the option belongs to the socket.

use std::net::SocketAddr;

use rustix::net::sockopt;
use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};
use sea_orm::DbBackend;

use crate::helpers::{pg_value, spawn_app};

/// Whether each open TCP socket of this process connected to `port` has `TCP_NODELAY` set.
fn nodelay_of_sockets_to(port: u16) -> Vec<bool> {
    let me = pidfd_open(getpid(), PidfdFlags::empty()).expect("a pidfd of this process");
    let entries = std::fs::read_dir("/proc/self/fd").expect("the process's descriptors");
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        // A descriptor closed since the listing, or not a socket, is no connection.
        .filter_map(|fd| pidfd_getfd(&me, fd, PidfdGetfdFlags::empty()).ok())
        .filter(|socket| {
            rustix::net::getpeername(socket)
                .ok()
                .flatten()
                .and_then(|peer| SocketAddr::try_from(peer).ok())
                .is_some_and(|peer| peer.port() == port)
        })
        .map(|socket| sockopt::tcp_nodelay(&socket).expect("TCP_NODELAY of a TCP socket"))
        .collect()
}

#[tokio::test]
async fn postgres_connections_do_not_hold_a_message_for_acknowledgements() {
    let app = spawn_app().await;
    let conn = app.db_connection().await;
    if conn.get_database_backend() != DbBackend::Postgres {
        return;
    }
    // Requests through the server, so its pool and its listener hold connections.
    let owner = app.sign_up("nodelay@example.com").await;
    app.create_calendar(&owner, "Sent at once").await;
    let port: Option<i32> = pg_value(&conn, "SELECT inet_server_port() AS n").await;
    let port = port
        .and_then(|port| u16::try_from(port).ok())
        .expect("the test database is reached over TCP");

    let sockets = nodelay_of_sockets_to(port);
    assert!(
        !sockets.is_empty(),
        "no socket of this process is connected to the database's port {port}"
    );
    let delayed = sockets.iter().filter(|nodelay| !**nodelay).count();
    assert_eq!(
        delayed,
        0,
        "{delayed} of {} database connections leave Nagle's algorithm on",
        sockets.len()
    );
}
