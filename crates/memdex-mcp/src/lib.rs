//! memdex as a Model Context Protocol server: an assistant remembers conversations, searches
//! them (with the question's date and the conversation's recent turns), lists and forgets
//! them through four tools. Built on the official Rust SDK (`rmcp`); the `memdex mcp`
//! subcommand serves it over stdio.
//!
//! Scope: a server started for one tenant (`memdex mcp --tenant alice`) serves only that
//! tenant's memory and its tools take no tenant; otherwise each call names its `tenant`.
//!
//! Errors, as the MCP specification asks (input errors are tool execution errors, so the model
//! can correct itself): a malformed call (bad arguments, an unknown stage, a bad date), an
//! unknown tenant or session, a conflicting session id, a full queue or an uncommitted write
//! is a tool result with `isError: true` carrying memdex's message (and `{"error": code,
//! "message": …}` as structured content); a closed or broken engine is a JSON-RPC `-32603`;
//! an unknown tool is a JSON-RPC error from the SDK; `arguments` that are no object (a call
//! the SDK cannot read at all) are a JSON-RPC `-32602` (invalid params); a line that is not
//! JSON is answered with a JSON-RPC `-32700` (parse error, `id: null`), as JSON-RPC 2.0 asks.
//! A search of a tenant with no memory yet answers no hits, and listing it no conversations
//! (an assistant's first call for a new user is not an error).

mod stdio;

use std::sync::Arc;

use memdex_core::content_hash;
use memdex_memory::{
    format_ms, DeleteTarget, Memory, MemoryError, SearchRequest, Stages, DEFAULT_K, MAX_K,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    ErrorData, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Who speaks a turn.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub role: Role,
    pub content: String,
}

/// `remember`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// Whose memory (1-128 of A-Z a-z 0-9 . _ - @). Leave out when the server serves one tenant.
    pub tenant: Option<String>,
    /// A stable id for this conversation. Default: derived from its date and turns, so the
    /// same conversation remembered twice is stored once.
    pub session_id: Option<String>,
    /// When the conversation took place: RFC 3339 or YYYY-MM-DD[ HH:MM] (UTC). Default: now.
    pub date: Option<String>,
    /// The conversation, oldest message first.
    pub turns: Vec<Turn>,
}

/// `search_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Whose memory. Leave out when the server serves one tenant.
    pub tenant: Option<String>,
    /// The question, in the user's words.
    pub query: String,
    /// How many memories to return (default 10, at most 1000: memdex's `DEFAULT_K` and
    /// `MAX_K`, as over HTTP and in Python).
    #[schemars(range(min = 1, max = MAX_K))]
    pub k: Option<usize>,
    /// When the question is asked, for references such as "last weekend" (RFC 3339 or
    /// YYYY-MM-DD). Default: now.
    pub date: Option<String>,
    /// The conversation's last few messages, oldest first: used when the question alone is
    /// ambiguous ("and how old is it?").
    pub recent_turns: Option<Vec<String>>,
    /// Ranking stages by the names of `memdex search`'s flags, e.g. {"retriever": "dense",
    /// "time": "boost"}.
    pub stages: Option<serde_json::Map<String, Value>>,
    /// Answer the memories sorted by time with a reading prompt, ready to answer from.
    pub context: Option<bool>,
    /// Give each memory its score after every ranking stage (why it ranked where it did).
    pub explain: Option<bool>,
}

/// `list_memories`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Whose memory. Leave out when the server serves one tenant.
    pub tenant: Option<String>,
    /// List this conversation's memories (with ids); default: list the conversations.
    pub session_id: Option<String>,
}

/// `forget`'s arguments: exactly one of `session_id`, `item_id`, `everything`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// Whose memory. Leave out when the server serves one tenant.
    pub tenant: Option<String>,
    /// Forget this conversation.
    pub session_id: Option<String>,
    /// Forget this one memory (an id from search_memory or list_memories).
    pub item_id: Option<u64>,
    /// Forget everything about the tenant.
    pub everything: Option<bool>,
}

/// The MCP server over one open memory.
#[derive(Debug, Clone)]
pub struct MemoryServer {
    memory: Arc<Memory>,
    tenant: Option<String>,
    tool_router: ToolRouter<Self>,
}

fn invalid(message: impl Into<String>) -> MemoryError {
    MemoryError::Invalid(message.into())
}

/// A memdex failure as MCP wants it (see the crate docs): what the assistant can act on (fix
/// the arguments, look elsewhere, retry) is a tool result with `isError: true`, memdex's
/// message as text and `{"error": code, "message": …}` as structured content; a closed or
/// broken engine is a JSON-RPC internal error.
fn answer(e: MemoryError) -> Result<CallToolResult, ErrorData> {
    let message = e.to_string();
    let code = e.code();
    match e {
        MemoryError::Closed | MemoryError::Internal(_) => Err(ErrorData::internal_error(
            message,
            Some(json!({"code": code})),
        )),
        MemoryError::Invalid(_)
        | MemoryError::TooLarge(_)
        | MemoryError::DiskFull(_)
        | MemoryError::NotFound(_)
        | MemoryError::Conflict(_)
        | MemoryError::Busy(_)
        | MemoryError::NotCommitted(_) => {
            let mut r = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
            r.structured_content = Some(json!({"error": code, "message": message}));
            Ok(r)
        }
    }
}

fn structured(value: Value, text: String) -> CallToolResult {
    let mut r = CallToolResult::structured(value);
    r.content = vec![ContentBlock::text(text)];
    r
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, MemoryError> {
    serde_json::to_value(v).map_err(|e| MemoryError::Internal(e.to_string()))
}

/// One line per line-able thing.
fn lines<T>(xs: &[T], f: impl Fn(&T) -> String) -> String {
    xs.iter().map(f).collect::<Vec<_>>().join("\n")
}

impl MemoryServer {
    /// Serves `memory`; `tenant`: the one tenant this server is for (None: every call names
    /// its tenant).
    pub fn new(memory: Arc<Memory>, tenant: Option<String>) -> MemoryServer {
        MemoryServer {
            memory,
            tool_router: scoped(Self::tool_router(), tenant.is_some()),
            tenant,
        }
    }

    /// The tenant a call is about.
    fn tenant(&self, given: Option<String>) -> Result<String, MemoryError> {
        match (&self.tenant, given) {
            (Some(fixed), Some(t)) if *fixed != t => Err(invalid(format!(
                "tenant: this server serves only {fixed:?}, not {:?}",
                memdex_core::clip(&t, 64)
            ))),
            (Some(fixed), _) => Ok(fixed.clone()),
            (None, Some(t)) => Ok(t),
            (None, None) => Err(invalid(
                "tenant: missing (this server is not started for one tenant: name it)",
            )),
        }
    }

    /// Runs blocking memory work off the async threads.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Memory) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        let m = self.memory.clone();
        tokio::task::spawn_blocking(move || f(&m))
            .await
            .map_err(|e| MemoryError::Internal(format!("memory task failed: {e}")))?
    }

    async fn do_remember(&self, a: RememberArgs) -> Result<CallToolResult, MemoryError> {
        let tenant = self.tenant(a.tenant)?;
        let turns = to_value(&a.turns)?;
        let session_id = match a.session_id {
            Some(id) => id,
            None => {
                let seed = json!([a.date, turns]).to_string();
                format!("mcp-{:016x}", content_hash(seed.as_bytes()))
            }
        };
        let mut session = json!({"session_id": session_id, "turns": turns});
        if let Some(d) = a.date {
            session["date"] = Value::String(d);
        }
        let t = tenant.clone();
        let out = self.run(move |m| m.add_json(session, Some(&t))).await?;
        let report = out.into_iter().next().map(|a| a.report);
        let v = to_value(&json!({"tenant": tenant, "report": report}))?;
        let status = v["report"]["sessions"][0]["status"]
            .as_str()
            .unwrap_or("stored");
        let text = format!("{status}: conversation {session_id:?} of {tenant:?}");
        Ok(structured(v, text))
    }

    async fn do_search(&self, a: SearchArgs) -> Result<CallToolResult, MemoryError> {
        let tenant = self.tenant(a.tenant)?;
        let stages: Stages = match a.stages {
            Some(map) => serde_json::from_value(Value::Object(map))
                .map_err(|e| invalid(format!("stages: {e}")))?,
            None => Stages::default(),
        };
        let req = SearchRequest {
            query: a.query,
            k: a.k.unwrap_or(DEFAULT_K),
            date: a.date,
            recent_turns: a.recent_turns.unwrap_or_default(),
            stages,
            explain: a.explain.unwrap_or(false),
            context: a.context.unwrap_or(false),
        };
        let req_context = req.context;
        // a tenant with no memory yet: no hits (an assistant's first search of a new user)
        let ans = self.run(move |m| m.search_or_empty(&tenant, &req)).await?;
        if req_context {
            let v = ans.context();
            let text = serde_json::to_string_pretty(&v).unwrap_or_default();
            return Ok(structured(v, text));
        }
        let mut text = lines(&ans.hits, |h| {
            format!(
                "{}. [{} · conversation {} · id {}] {}",
                h.rank,
                format_ms(h.timestamp_ms),
                h.session_id,
                h.item_id,
                h.value
            )
        });
        if ans.hits.is_empty() {
            text.push_str("no memories");
        }
        Ok(structured(to_value(&ans)?, text))
    }

    async fn do_list(&self, a: ListArgs) -> Result<CallToolResult, MemoryError> {
        let tenant = self.tenant(a.tenant)?;
        let t = tenant.clone();
        let Some(id) = a.session_id else {
            // a tenant with no memory yet has no conversations
            let s = match self.run(move |m| m.sessions(&t)).await {
                Err(MemoryError::NotFound(_)) => Vec::new(),
                r => r?,
            };
            let text = lines(&s, |s| {
                let when = format_ms(s.timestamp_ms);
                format!("{} · {when} · {} memories", s.session_id, s.items)
            });
            let v = to_value(&json!({"tenant": tenant, "sessions": s}))?;
            return Ok(structured(v, text));
        };
        let items = self.run(move |m| m.items(&t, Some(&id))).await?;
        let text = lines(&items, |i| format!("id {}: {}", i.item_id, i.value));
        let v = to_value(&json!({"tenant": tenant, "items": items}))?;
        Ok(structured(v, text))
    }

    async fn do_forget(&self, a: ForgetArgs) -> Result<CallToolResult, MemoryError> {
        let tenant = self.tenant(a.tenant)?;
        let t = tenant.clone();
        let target = match (a.session_id, a.item_id, a.everything.unwrap_or(false)) {
            (Some(session_id), None, false) => DeleteTarget::Session {
                tenant: t,
                session_id,
            },
            (None, Some(item_id), false) => DeleteTarget::Item { tenant: t, item_id },
            (None, None, true) => DeleteTarget::Tenant { tenant: t },
            _ => {
                return Err(invalid(
                    "give exactly one of session_id, item_id, everything: true",
                ))
            }
        };
        let r = self.run(move |m| m.delete(target)).await?;
        let text = format!("forgot {} memories of {tenant:?}", r.items_deleted);
        Ok(structured(to_value(&r)?, text))
    }
}

#[tool_router]
impl MemoryServer {
    #[tool(
        name = "remember",
        description = "Store a conversation in long-term memory (durable when this returns). \
                       Remembering the same conversation again stores nothing new."
    )]
    async fn remember(
        &self,
        Parameters(a): Parameters<RememberArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.do_remember(a).await.or_else(answer)
    }

    #[tool(
        name = "search_memory",
        description = "Search long-term memory for what is relevant to a question: the best \
                       matching memories, best first, each with its date and conversation."
    )]
    async fn search_memory(
        &self,
        Parameters(a): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.do_search(a).await.or_else(answer)
    }

    #[tool(
        name = "list_memories",
        description = "List the remembered conversations (id, date, size), or the memories of \
                       one conversation with their ids."
    )]
    async fn list_memories(
        &self,
        Parameters(a): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.do_list(a).await.or_else(answer)
    }

    #[tool(
        name = "forget",
        description = "Forget one conversation (session_id), one memory (item_id) or \
                       everything about the user (everything: true). Searches no longer see \
                       it when this returns."
    )]
    async fn forget(
        &self,
        Parameters(a): Parameters<ForgetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.do_forget(a).await.or_else(answer)
    }
}

/// The tools as a client sees them: a server started for one tenant takes no `tenant`
/// argument, so its tool schemas do not list one.
fn scoped(mut router: ToolRouter<MemoryServer>, one_tenant: bool) -> ToolRouter<MemoryServer> {
    if one_tenant {
        for route in router.map.values_mut() {
            let mut schema = (*route.attr.input_schema).clone();
            if let Some(Value::Object(props)) = schema.get_mut("properties") {
                props.remove("tenant");
            }
            if let Some(Value::Array(required)) = schema.get_mut("required") {
                required.retain(|r| r != "tenant");
            }
            route.attr.input_schema = Arc::new(schema);
        }
    }
    router
}

/// The requests MCP defines that a client may send a server: one of these that reaches
/// [`ServerHandler::on_custom_request`] came with params the SDK could not read.
const MCP_METHODS: [&str; 17] = [
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    /// A request the SDK could not read as any MCP request. A method MCP defines got params
    /// of the wrong shape (`"arguments": "oops"`): JSON-RPC `-32602` (invalid params) naming
    /// what is wrong; any other method: `-32601` (method not found).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        if !MCP_METHODS.contains(&method) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {}", memdex_core::clip(method, 64)),
                None,
            ));
        }
        let why = match (method, &request.params) {
            ("tools/call", _) => match request.params_as::<CallToolRequestParams>() {
                Err(e) => e.to_string(),
                Ok(None) => "missing (tools/call needs a name and arguments)".to_string(),
                Ok(Some(_)) => "not readable".to_string(),
            },
            (_, None) => "missing".to_string(),
            (_, Some(_)) => "not of the shape the method takes".to_string(),
        };
        Err(ErrorData::invalid_params(
            format!("invalid params for {method}: {why}"),
            None,
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let scope = match &self.tenant {
            Some(t) => format!("This server holds the memory of {t:?}; tools take no tenant."),
            None => "Each call names the tenant (user) whose memory it is about.".to_string(),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memdex", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Long-term memory of past conversations. Call `remember` with a conversation \
                 once it is over; call `search_memory` with the user's question (and the \
                 conversation's last turns, and today's date) before answering from memory; \
                 `list_memories` and `forget` manage what is kept. {scope}"
            ))
    }
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP session could not start: {0}")]
    Start(String),
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// Serves MCP over this process's stdin and stdout until the client closes them. A line that
/// is not JSON is answered with JSON-RPC's parse error (see [`stdio`]).
pub async fn serve_stdio(server: MemoryServer) -> Result<(), McpError> {
    let (sdk, pump) = stdio::pump(tokio::io::stdin(), tokio::io::stdout());
    let service = server
        .serve(sdk)
        .await
        .map_err(|e| McpError::Start(e.to_string()))?;
    let done = service
        .waiting()
        .await
        .map_err(|e| McpError::Session(e.to_string()));
    // everything answered reaches stdout before this returns
    let _ = pump.await;
    done?;
    Ok(())
}
