//! Realtime across servers: while a user of B has a stream open on B, B holds one upstream
//! stream to A per connection (`svc_federated_upstream_streams`) and re-emits each frame of A
//! as `federated_sync {server, upstreamType}`; the upstream stream closes with the user's last
//! local stream, comes back after A drops it, and is not counted while A cannot be reached.

use reqwest::{Method, StatusCode};

use crate::helpers::event_body;
use crate::helpers::federation::{
    Federation, Upstream, next_federated_sync, remove_member, until_stream_connections,
    until_upstream_streams, upstream_streams,
};

#[tokio::test]
async fn changes_on_the_origin_reach_the_home_stream_as_federated_sync() {
    let (fed, _connection) = Federation::connected().await;
    assert_eq!(
        upstream_streams(&fed.home).await,
        0.0,
        "no stream before one is open"
    );
    let mut stream = fed.home.stream(&fed.guest).await;
    until_upstream_streams(&fed.home, 1.0).await;
    until_stream_connections(&fed.origin, 1.0).await;

    let event = fed
        .origin
        .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "Standup", 9))
        .await;
    let frame = next_federated_sync(&mut stream).await;
    assert_eq!(
        frame["payload"]["server"],
        fed.origin.base.as_str(),
        "{frame}"
    );
    assert_eq!(frame["payload"]["upstreamType"], "event_created", "{frame}");
    assert!(!frame.to_string().contains("mt1_"));

    let mut renamed = event.clone();
    renamed["title"] = "Standup (moved)".into();
    let response = fed
        .origin
        .event_request(Method::PUT, &fed.owner, &renamed)
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let frame = next_federated_sync(&mut stream).await;
    assert_eq!(frame["payload"]["upstreamType"], "event_updated", "{frame}");
    assert_eq!(frame["payload"]["server"], fed.origin.base.as_str());
}

#[tokio::test]
async fn one_upstream_stream_per_connection_while_any_local_stream_is_open() {
    let (fed, _connection) = Federation::connected().await;
    let first = fed.home.stream(&fed.guest).await;
    until_upstream_streams(&fed.home, 1.0).await;
    until_stream_connections(&fed.origin, 1.0).await;
    let mut second = fed.home.stream(&fed.guest).await;
    // A frame through the second stream shows it is fully open before counting again.
    fed.origin
        .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "Standup", 9))
        .await;
    next_federated_sync(&mut second).await;
    assert_eq!(
        upstream_streams(&fed.home).await,
        1.0,
        "still one upstream stream"
    );

    drop(first);
    fed.origin
        .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "Retro", 14))
        .await;
    let frame = next_federated_sync(&mut second).await;
    assert_eq!(frame["payload"]["upstreamType"], "event_created");
    assert_eq!(
        upstream_streams(&fed.home).await,
        1.0,
        "one local stream is left"
    );

    drop(second);
    until_upstream_streams(&fed.home, 0.0).await;
}

#[tokio::test]
async fn an_upstream_stream_that_the_origin_drops_comes_back() {
    let fed = Federation::start().await;
    let peer = Upstream::relaying_to(&fed.origin.base).await;
    fed.connect_ok(&peer.base, &fed.invite.clone()).await;
    let mut stream = fed.home.stream(&fed.guest).await;
    let stream_requests = || {
        peer.seen()
            .iter()
            .filter(|r| r.target.starts_with("/api/stream"))
            .count()
    };
    crate::helpers::eventually("B opens its upstream stream", || async {
        stream_requests() == 1
    })
    .await;
    until_upstream_streams(&fed.home, 1.0).await;

    peer.cut_streams();
    crate::helpers::eventually("B opens it again", || async { stream_requests() >= 2 }).await;
    until_upstream_streams(&fed.home, 1.0).await;
    // The new upstream stream may still be starting on A: keep changing until one arrives.
    let mut hour = 8;
    let frame = loop {
        fed.origin
            .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "After", hour))
            .await;
        let frame = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            next_federated_sync(&mut stream),
        )
        .await;
        if let Ok(frame) = frame {
            break frame;
        }
        hour += 1;
        assert!(
            hour < 18,
            "no federated_sync after the upstream stream came back"
        );
    };
    assert_eq!(frame["payload"]["upstreamType"], "event_created");
    assert_eq!(frame["payload"]["server"], peer.base.as_str());
}

#[tokio::test]
async fn a_shadow_removed_on_the_origin_gets_no_more_frames() {
    let (fed, _connection) = Federation::connected().await;
    let shadow = fed.shadow_id().await;
    let mut stream = fed.home.stream(&fed.guest).await;
    until_upstream_streams(&fed.home, 1.0).await;
    until_stream_connections(&fed.origin, 1.0).await;
    assert_eq!(
        remove_member(&fed.origin, &fed.owner, &fed.calendar_id, &shadow).await,
        StatusCode::OK
    );
    fed.origin
        .create_event(
            &fed.owner,
            &event_body(&[&fed.calendar_id], "Private now", 9),
        )
        .await;
    // The home stream itself stays open: B's own changes still arrive.
    let calendar = fed.home.create_calendar(&fed.guest, "Home").await;
    let event = fed
        .home
        .create_event(
            &fed.guest,
            &event_body(&[calendar["id"].as_str().expect("id")], "At home", 9),
        )
        .await;
    let frame = loop {
        let frame = stream.next_frame().await;
        if frame["type"] != "federated_sync"
            || frame["payload"]["upstreamType"] != "calendar_removed"
        {
            break frame;
        }
    };
    assert_eq!(frame["type"], "event_created", "no frame from A: {frame}");
    assert_eq!(frame["payload"]["id"], event["id"]);
}

#[tokio::test]
async fn the_upstream_gauge_counts_no_stream_while_the_origin_is_unreachable() {
    let fed = Federation::start().await;
    let peer = Upstream::relaying_to(&fed.origin.base).await;
    fed.connect_ok(&peer.base, &fed.invite.clone()).await;
    drop(peer);
    let _stream = fed.home.stream(&fed.guest).await;
    crate::helpers::eventually("B fails to open its upstream stream twice", || async {
        failed_upstream_streams(&fed.home).await >= 2.0
    })
    .await;
    assert_eq!(
        upstream_streams(&fed.home).await,
        0.0,
        "nothing is open to an unreachable origin"
    );
}

/// The sum of `svc_federated_upstream_failures_total` over its reasons.
async fn failed_upstream_streams(app: &crate::helpers::TestApp) -> f64 {
    app.metrics_text()
        .await
        .lines()
        .filter(|line| line.starts_with("svc_federated_upstream_failures_total"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
