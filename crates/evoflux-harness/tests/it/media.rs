//! Images in the conversation: an MCP tool's image content (and an
//! embedded image resource) becomes media on the tool message, a user's
//! attached image goes on the user message, and both reach the model and
//! the stored transcript.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Recorder, World, call, text};
use evoflux_core::AppMode;
use evoflux_harness::{CollectEvents, Harness, SessionRequest, TurnOptions};
use evoflux_mcp::testserver::{TINY_PNG, TestServerOptions, serve_http};
use evoflux_mcp::{ManagerOptions, McpRuntime};
use evoflux_model::{Media, MediaKind, Message};
use evoflux_store::WorkspaceRequest;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_image_and_a_user_image_reach_the_model_and_the_transcript() {
    let srv = serve_http(TestServerOptions::default(), 0).await.unwrap();
    let mcp = json!({"mcpServers": {"live": {"type": "http", "url": srv.url()}}});
    let world = World::with_files(&[(".evoflux/mcp.json", &mcp.to_string())]);
    let rt = McpRuntime::new(&world.graph, None, ManagerOptions::default())
        .unwrap()
        .0;
    let provider = Recorder::new(vec![
        call("c1", "mcp__live__image", json!({})),
        text("A red dot, twice."),
    ]);
    let mut setup = world
        .setup(
            AppMode::Work,
            provider.clone(),
            Arc::new(CollectEvents::default()),
        )
        .await;
    setup.agent.mcp = vec!["live".into()];
    setup.mcp = Some(rt.clone());
    let request = SessionRequest::New {
        workspace: WorkspaceRequest::Work,
        graph_hash: None,
    };
    let mut h = Harness::open(setup, request).await.unwrap();
    rt.settle(Duration::from_secs(20)).await;

    let attached = Media {
        name: Some("dot.png".into()),
        ..Media::new(MediaKind::Image, "image/png", TINY_PNG)
    };
    h.turn(
        Some("What does the image tool show?"),
        TurnOptions {
            media: vec![attached.clone()],
            ..TurnOptions::default()
        },
    )
    .await
    .unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let user = requests[0]
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::User { .. }))
        .unwrap();
    assert_eq!(user.media(), std::slice::from_ref(&attached));
    let Some(Message::Tool { content, media, .. }) = requests[1].messages.last() else {
        panic!("{:?}", requests[1].messages.last());
    };
    assert_eq!(content, "a red dot");
    let image = Media::new(MediaKind::Image, "image/png", TINY_PNG);
    let resource = Media {
        source: Some("test://dot.png".into()),
        ..image.clone()
    };
    assert_eq!(media, &vec![image, resource]);

    // Stored as sent: a reopened session sends the same media again.
    let transcript = h.store().transcript(h.session().id).await.unwrap();
    let stored: Vec<usize> = transcript.iter().map(|e| e.message.media().len()).collect();
    assert!(stored.contains(&1) && stored.contains(&2), "{stored:?}");
    rt.shutdown().await;
}
