//! Layer 4, the surface: the app (state, router, server), HTTP routes that
//! compose lower layers (SSE, interrupt resolution, run actions, discovery),
//! the conformance seams, the MCP server mount, upstream-only mode, the
//! command line and the mutant list.

pub mod a2a;
pub mod app;
pub mod catalog_routes;
pub mod cli;
pub mod discovery;
pub mod effect_seams;
pub mod error_shape;
pub mod interrupt_routes;
pub mod mcp_server;
pub mod mutants;
pub mod run_actions;
pub mod seams;
pub mod sse;
pub mod upstream;
pub mod webhook_routes;
pub mod workflow_fork;
