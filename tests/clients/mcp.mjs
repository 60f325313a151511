// The agent against real MCP servers from npm (SPEC §18), with the newest SDK's client as the
// editor: server-everything and server-filesystem (allowed: the session's cwd) over stdio, each
// behind mcp-tap.mjs (which logs its wire), the model a replay of mcp-recording.json. Three turns
// in one session:
//   1. full-access (nothing asks): echo, get-sum, get-tiny-image (the model sees the image as
//      "[image/png, N bytes omitted]"), get-sum with a string (refused by the agent's own argument
//      check: the server never sees it), get-resource-reference with a bad id (the server's
//      isError), the long-running operation, resource links, an embedded resource, structured
//      content, get-env (our environment minus ACP_AGENT_* plus the ACP env); the filesystem's
//      list_directory, read_file, write_file, and a read outside its allowed directory that it
//      refuses. The recording's "expect"s pin what the model saw after each call; this driver pins
//      the ACP updates of each (title "<server>: <tool>", kind, statuses, content).
//   2. default: every MCP call asks; echo is allowed, a write_file rejected (no file appears, and
//      the server's wire holds no such call).
//   3. default: the long-running operation allowed, then session/cancel while it runs
//      (notifications/cancelled names its request).
// Then stdin EOF: the agent exits 0 (the busy server needs the SIGTERM of the ladder) and no server
// process (found by its script and its cwd, the session's workspace) is left. Every ACP line the
// agent wrote is validated against the ACP schema, every MCP message it sent against the MCP
// SDK's schemas; the handshake (versions, capabilities, order) and the session log's mcp/server
// events with the servers' public tool names are pinned.
// Environment from mcp_servers.sh: CLIENTS_AGENT, CLIENTS_WORK, CLIENTS_RECORDING, MCP_SERVERS
// (the node_modules/@modelcontextprotocol folder).
import * as acp from "sdk-new";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";
import { schemaValidator } from "./schema.mjs";
import { ClientNotificationSchema, ClientRequestSchema, ClientResultSchema, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";

const started = Date.now();
const h = harness("mcp", { timeoutSeconds: 90 });
process.env.ACP_AGENT_LOG = "debug";
const mods = process.env.MCP_SERVERS;
const scripts = { everything: join(mods, "server-everything", "dist", "index.js"), filesystem: join(mods, "server-filesystem", "dist", "index.js") };
const cwd = realpathSync(h.cwd);
writeFileSync(join(cwd, "a.txt"), "alpha\nbeta\n");
mkdirSync(join(cwd, "sub"));
const outside = join(cwd, "..", "outside.txt");
writeFileSync(outside, "outside the allowed directory\n");
const MARK = "set in mcpServers env";

// The public names, pinned: what tools/list of the pinned servers gives (SPEC §18: mcp__<server>__<tool>;
// none needs the hash suffix). everything's simulate-research-query needs tasks and is left out (§20.1).
const TOOLS = {
  everything: ["echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-structured-content",
    "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging", "toggle-subscriber-updates",
    "trigger-long-running-operation"],
  filesystem: ["read_file", "read_text_file", "read_media_file", "read_multiple_files", "write_file", "edit_file", "create_directory",
    "list_directory", "list_directory_with_sizes", "directory_tree", "move_file", "search_files", "get_file_info",
    "list_allowed_directories"],
};

// The server processes of this run still alive: a server script in the command line, the workspace as cwd.
function serverProcesses() {
  const found = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      const which = Object.keys(scripts).find((k) => cmd.includes(scripts[k]));
      if (which && readlinkSync(`/proc/${pid}/cwd`) === cwd) found.push(`${which} (pid ${pid})`);
    } catch { /* gone meanwhile */ }
  }
  return found;
}

const updates = []; // [turn, update]
const asks = []; // [turn, params]
let turn = 0;
let cancelSlow = null; // set in turn 3: called when the slow call is in progress
const answers = { "everything: echo": "allow", "filesystem: write_file": "reject", "everything: trigger-long-running-operation": "allow" };
const a = spawnAgent(h);
const conn = acp.client({ name: "acp-agent-mcp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push([turn, params.update]);
    if (cancelSlow && /^tool_call(_update)?$/.test(params.update.sessionUpdate) && params.update.status === "in_progress") cancelSlow();
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asks.push([turn, params]);
    const optionId = answers[params.toolCall?.title] ?? "reject";
    return { outcome: { outcome: "selected", optionId } };
  })
  .connect(acp.ndJsonStream(a.stdin, a.stdout));
const agent = conn.agent;

h.step("initialize");
const init = await h.attempt("initialize", () => agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }));
h.check(init?.agentCapabilities?.mcpCapabilities, "initialize advertises no mcpCapabilities");
h.step("session/new");
// Each server behind mcp-tap.mjs, which logs its wire into wire-<name>.log.
const tap = join(dirname(fileURLToPath(import.meta.url)), "mcp-tap.mjs");
const wireLog = (name) => join(h.work, `wire-${name}.log`);
const mcpServers = [
  { name: "everything", command: process.execPath, args: [tap, wireLog("everything"), process.execPath, scripts.everything, "stdio"],
    env: [{ name: "MCP_SERVERS_MARK", value: MARK }] },
  { name: "filesystem", command: process.execPath, args: [tap, wireLog("filesystem"), process.execPath, scripts.filesystem, cwd], env: [] },
];
const created = await h.attempt("session/new", () => agent.request(acp.methods.agent.session.new, { cwd, mcpServers }));
const sessionId = created?.sessionId;
h.eq(created?.modes?.currentModeId, "default", "the new session's mode");

const prompt = async (text, want) => {
  turn++;
  h.step(`turn ${turn}`);
  const r = await h.attempt(`session/prompt ${turn}`, () => agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }));
  h.eq(r?.stopReason, want, `turn ${turn}'s stopReason`);
};
const setMode = (modeId) => h.attempt(`session/set_mode ${modeId}`, () => agent.request(acp.methods.agent.session.setMode, { sessionId, modeId }));

// The tool calls of a turn, in order: {title, kind, statuses, text} from the tool_call and its updates.
const textOf = (u) => (u.content ?? []).map((c) => (c.type === "content" && c.content?.type === "text" ? c.content.text : "")).join("");
function calls(t) {
  const byId = new Map();
  for (const [n, u] of updates) {
    if (n !== t) continue;
    if (u.sessionUpdate === "tool_call") byId.set(u.toolCallId, { title: u.title, kind: u.kind, statuses: [u.status], text: textOf(u), rawInput: u.rawInput, rawOutput: u.rawOutput });
    else if (u.sessionUpdate === "tool_call_update" && byId.has(u.toolCallId)) {
      const c = byId.get(u.toolCallId);
      if (u.status) c.statuses.push(u.status);
      if (u.content) c.text = textOf(u);
      if (u.rawOutput) c.rawOutput = u.rawOutput;
    }
  }
  return [...byId.values()];
}
const said = (t) => updates.filter(([n, u]) => n === t && u.sessionUpdate === "agent_message_chunk").map(([, u]) => (u.content?.type === "text" ? u.content.text : "")).join("");
function checkCalls(t, want) {
  const got = calls(t);
  h.eq(got.map((c) => c.title).join(", "), want.map((w) => w[0]).join(", "), `turn ${t}'s tool call titles`);
  want.forEach(([title, statuses, text], i) => {
    const c = got[i];
    if (!c) return;
    h.eq(c.kind, "other", `the kind of ${title} (call ${i + 1})`);
    h.eq(c.statuses.join(" "), statuses, `the statuses of ${title} (call ${i + 1})`);
    h.check(c.text.includes(text), `the content of ${title} (call ${i + 1}) lacks ${JSON.stringify(text)}: ${JSON.stringify(c.text.slice(0, 300))}`);
  });
  return got;
}

// Turn 1: nothing asks.
await setMode("full-access");
await prompt("Use every MCP tool once.", "end_turn");
const t1 = checkCalls(1, [
  ["everything: echo", "in_progress completed", "Echo: hello from acp-agent"],
  ["everything: get-sum", "in_progress completed", "The sum of 2 and 40.5 is 42.5."],
  ["everything: get-tiny-image", "in_progress completed", "Here's the image you requested:\n[image/png, 4033 bytes omitted]\nThe image above is the MCP logo."],
  ["everything: get-sum", "in_progress failed", "invalid arguments: \"a\" must be a number"],
  ["everything: get-resource-reference", "in_progress failed", "Invalid resourceId: -1. Must be a finite positive integer."],
  ["everything: trigger-long-running-operation", "in_progress completed", "Long running operation completed. Duration: 0.4 seconds, Steps: 2."],
  ["everything: get-resource-links", "in_progress completed", "Blob Resource 1 demo://resource/dynamic/blob/1\nText Resource 2 demo://resource/dynamic/text/2"],
  ["everything: get-resource-reference", "in_progress completed", "demo://resource/dynamic/text/3\nResource 3: This is a plaintext resource"],
  ["everything: get-structured-content", "in_progress completed", "{\"temperature\":36,\"conditions\":\"Light rain / drizzle\",\"humidity\":82}"],
  ["everything: get-env", "in_progress completed", `"MCP_SERVERS_MARK": "${MARK}"`],
  ["filesystem: list_directory", "in_progress completed", "[FILE] a.txt"],
  ["filesystem: read_file", "in_progress completed", "alpha\nbeta\n"],
  ["filesystem: write_file", "in_progress completed", "Successfully wrote to sub/new.txt"],
  ["filesystem: read_text_file", "in_progress failed", "Access denied - path outside allowed directories"],
]);
const env = t1.find((c) => c.title === "everything: get-env")?.text ?? "";
h.check(!env.includes("ACP_AGENT_"), "the server's environment holds ACP_AGENT_* variables (SPEC §20.1: ours minus ACP_AGENT_*)");
h.check(env.includes("\"PATH\""), "the server's environment lacks PATH (SPEC §20.1: ours minus ACP_AGENT_*)");
h.eq(said(1), "All the tools answered.", "turn 1's reply");
h.eq(existsSync(join(cwd, "sub", "new.txt")) ? readFileSync(join(cwd, "sub", "new.txt"), "utf8") : null, "written by the filesystem server\n", "sub/new.txt after write_file");
h.eq(readFileSync(outside, "utf8"), "outside the allowed directory\n", "the file outside the allowed directory");
h.eq(asks.length, 0, "permission requests in full-access");

// Turn 2: default mode asks for every MCP call.
await setMode("default");
await prompt("Now ask first.", "end_turn");
checkCalls(2, [
  ["everything: echo", "pending in_progress completed", "Echo: asked and allowed"],
  ["filesystem: write_file", "pending failed", "Error: the user rejected this tool call"],
]);
const asked2 = asks.filter(([n]) => n === 2).map(([, p]) => p);
h.eq(asked2.map((p) => p.toolCall?.title).join(", "), "everything: echo, filesystem: write_file", "turn 2's permission requests");
for (const p of asked2) {
  h.eq(p.toolCall?.kind, "other", `the kind in the ask for ${p.toolCall?.title}`);
  h.eq(p.options?.map((o) => o.kind).join(","), "allow_once,allow_always,reject_once,reject_always", `the options of the ask for ${p.toolCall?.title}`);
}
h.eq(said(2), "The write was rejected.", "turn 2's reply");
h.check(!existsSync(join(cwd, "rejected.txt")), "rejected.txt exists: the server got the rejected write_file");

// Turn 3: a slow call, allowed, then cancelled while the server works on it.
let cancelled = false;
cancelSlow = () => {
  if (cancelled) return;
  cancelled = true;
  setTimeout(() => agent.notify(acp.methods.agent.session.cancel, { sessionId }), 300);
};
await prompt("Wait for a slow one.", "cancelled");
cancelSlow = null;
h.check(cancelled, "turn 3's slow call never got in progress");
checkCalls(3, [["everything: trigger-long-running-operation", "pending in_progress failed", "Error: the tool call was cancelled"]]);

h.step("exit");
const exitAt = Date.now();
await stopAgent(h, a);
const exitSecs = ((Date.now() - exitAt) / 1000).toFixed(1);
conn.close();
const left = serverProcesses();
h.check(left.length === 0, `server processes left after the agent exited: ${left.join(", ")}`);

// What the agent logged: mcp/server events with the public names; the replay used up, never mismatched.
h.step("the session log");
const log = sessionId ? readFileSync(join(h.stateDir, "sessions", `${sessionId}.jsonl`), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
const events = log.filter((e) => e.type === "mcp/server").map((e) => e.data);
for (const name of Object.keys(TOOLS)) {
  const mine = events.filter((e) => e.name === name);
  h.eq(mine.map((e) => e.state).join(" "), "starting ready stopped", `the mcp/server states of ${name}`);
  h.eq(JSON.stringify(mine.find((e) => e.state === "ready")?.tools), JSON.stringify(TOOLS[name].map((t) => `mcp__${name}__${t}`)), `${name}'s public tool names`);
}
const stderr = h.traces().map((p) => p.stderr).join("").split("\n");
const complaints = stderr.filter((l) => /^acp-agent: (warn|error):|Sanitizer|runtime error:/.test(l) || /^acp-agent: debug: \[mcp:[^\]]*\].*(error|invalid|unknown|unsupported)/i.test(l));
h.check(complaints.length === 0, `the agent's stderr: ${complaints.join(" | ").slice(0, 400)}`);
h.check(stderr.includes("acp-agent: info: mcp everything: tool simulate-research-query needs tasks, left out"),
  "no info line for everything's simulate-research-query (taskSupport required: left out, SPEC §20.1)");

// The MCP wire, as each server saw it: every line JSON-RPC; ours valid against the MCP SDK's schemas.
h.step("the MCP wire");
const wire = {};
let sentMcp = 0;
for (const name of Object.keys(TOOLS)) {
  wire[name] = [];
  const raw = existsSync(wireLog(name)) ? readFileSync(wireLog(name), "utf8").split("\n").filter(Boolean) : [];
  raw.forEach((l, i) => {
    const from = l.slice(0, 2), where = `${name} wire line ${i + 1} (${from === ">>" ? "agent to server" : "server to agent"})`;
    let msg;
    try { msg = JSON.parse(l.slice(3)); } catch { h.fail(`${where} is not JSON: ${l.slice(3, 80)}`); return; }
    const base = JSONRPCMessageSchema.safeParse(msg);
    if (!base.success) h.fail(`${where} is not a JSON-RPC 2.0 message: ${base.error.issues[0]?.message}: ${l.slice(3, 200)}`);
    if (from === ">>") {
      const kind = typeof msg.method === "string" ? ("id" in msg ? ClientRequestSchema : ClientNotificationSchema) : ClientResultSchema;
      const r = kind.safeParse(typeof msg.method === "string" ? { method: msg.method, params: msg.params } : msg.result);
      if (!r.success && !msg.error) h.fail(`${where} is not a valid MCP client message: ${r.error.issues.map((x) => `${x.path.join(".")}: ${x.message}`).join("; ").slice(0, 200)}: ${l.slice(3, 200)}`);
    }
    wire[name].push({ from, msg });
    if (from === ">>") sentMcp++;
  });
}
for (const [name, msgs] of Object.entries(wire)) {
  const ours = msgs.filter((m) => m.from === ">>").map((m) => m.msg);
  const theirs = msgs.filter((m) => m.from === "<<").map((m) => m.msg);
  const init = ours[0];
  h.eq(init?.method, "initialize", `the agent's first message to ${name}`);
  h.eq(JSON.stringify(init?.params?.capabilities), "{}", `the client capabilities sent to ${name}`);
  h.eq(init?.params?.protocolVersion, "2025-11-25", `the protocol version asked of ${name}`);
  h.eq(init?.params?.clientInfo?.name, "acp-agent", `the clientInfo.name sent to ${name}`);
  const answer = theirs.find((m) => m.id === init?.id);
  h.eq(answer?.result?.protocolVersion, "2025-11-25", `the protocol version ${name} answered`);
  h.eq(ours.slice(1, 3).map((m) => m.method).join(" "), "notifications/initialized tools/list", `the agent's messages to ${name} after initialize`);
  for (const e of theirs.filter((m) => m.error)) h.fail(`${name} answered id ${e.id} with an error: ${JSON.stringify(e.error).slice(0, 200)}`);
  const requests = theirs.filter((m) => typeof m.method === "string" && "id" in m);
  h.check(requests.length === 0, `${name} sent requests to the agent: ${requests.map((m) => m.method).join(", ")}`);
}
const called = (name) => wire[name].filter((m) => m.from === ">>" && m.msg.method === "tools/call").map((m) => m.msg);
// get-sum with a string never reached the server (the agent checks arguments first); nor did the rejected write.
h.eq(called("everything").map((m) => m.params?.name).join(" "), "echo get-sum get-tiny-image get-resource-reference trigger-long-running-operation " +
  "get-resource-links get-resource-reference get-structured-content get-env echo trigger-long-running-operation", "everything's tools/call names");
h.eq(JSON.stringify(called("everything")[1]?.params?.arguments), JSON.stringify({ a: 2, b: 40.5 }), "the arguments get-sum got");
h.eq(called("filesystem").map((m) => `${m.params?.name} ${m.params?.arguments?.path}`).join(", "),
  "list_directory ., read_file a.txt, write_file sub/new.txt, read_text_file ../outside.txt", "filesystem's tools/call names and paths");
const slow = called("everything").at(-1);
const cancels = wire.everything.filter((m) => m.from === ">>" && m.msg.method === "notifications/cancelled").map((m) => m.msg.params);
h.eq(JSON.stringify(cancels), JSON.stringify([{ requestId: slow?.id, reason: "cancelled" }]), "the notifications/cancelled everything got");

// Every line the agent wrote, against the ACP schema.
const { sdkVersion, checkDir } = schemaValidator();
const totals = { messages: 0, processes: 0, invalid: 0 };
const bad = [];
checkDir(h.traceDir, "schema", bad, totals);
for (const b of bad) h.fail(b);
h.check(totals.messages > 0, "no agent message was recorded");

const ncalls = [1, 2, 3].reduce((n, t) => n + calls(t).length, 0);
h.finish(`server-everything ${pkgVersion("@modelcontextprotocol/server-everything")}, server-filesystem ${pkgVersion("@modelcontextprotocol/server-filesystem")}` +
  ` (MCP sdk ${pkgVersion("@modelcontextprotocol/sdk")}): ${ncalls} tool calls, ${asks.length} asks; ${totals.messages} agent messages valid against` +
  ` sdk ${sdkVersion} schema/v1, ${sentMcp} MCP messages sent valid against the MCP sdk's types; exit ${exitSecs} s; node ${process.versions.node}; ${((Date.now() - started) / 1000).toFixed(1)} s`);
