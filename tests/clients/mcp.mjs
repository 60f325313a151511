// The agent against real MCP servers from npm (docs/contract.md §18), with the newest SDK's client as the
// editor: server-everything and server-filesystem (allowed: the session's cwd) over stdio, each
// behind mcp-tap.mjs (which logs its wire), and server-everything again as "web" over Streamable
// HTTP (started here on a free port, behind mcp-http-tap.mjs, with an ACP header whose value is a
// random secret); the model a replay of mcp-recording.json. Three turns in one session:
//   1. full-access (nothing asks): echo, get-sum, get-tiny-image (the model sees the image as
//      "[image/png, N bytes omitted]"), get-sum with a string (refused by the agent's own argument
//      check: the server never sees it), get-resource-reference with a bad id (the server's
//      isError), the long-running operation, resource links, an embedded resource, structured
//      content, get-env (our environment minus ACP_AGENT_* plus the ACP env); the filesystem's
//      list_directory, read_file, write_file, and a read outside its allowed directory that it
//      refuses; web's echo and get-sum. The recording's "expect"s pin what the model saw after
//      each call; this driver pins the ACP updates of each (title "<server>: <tool>", kind,
//      statuses, content).
//   2. default: every MCP call asks; echo (stdio and web) is allowed, a write_file rejected (no file
//      appears, and the server's wire holds no such call).
//   3. default: the long-running operation allowed, then session/cancel while it runs
//      (notifications/cancelled names its request).
// Then stdin EOF: the agent exits 0 (the busy server needs the SIGTERM of the ladder) and no server
// process (found by its script and its cwd, the session's workspace) is left. Every ACP line the
// agent wrote is validated against the ACP schema, every MCP message it sent against the MCP
// SDK's schemas; the handshake (versions, capabilities, order) and the session log's mcp/server
// events with the servers' public tool names are pinned. Over HTTP (docs/contract.md §20.1): the ACP header on
// every request, its value in none of the agent's output, stderr (at debug) or state; the session id
// of the initialize reply and the protocol version on every later request; the status of each reply;
// the GET stream; the DELETE at exit. The web server outlives the agent (it is not the agent's to
// stop); this driver stops it.
// Environment from mcp_servers.sh: CLIENTS_AGENT, CLIENTS_WORK, CLIENTS_RECORDING, MCP_SERVERS
// (the node_modules/@modelcontextprotocol folder).
import * as acp from "sdk-new";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";
import { httpTap, replyMessages } from "./mcp-http-tap.mjs";
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
const SECRET = randomBytes(18).toString("base64url"); // the value of web's ACP header
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// server-everything in streamableHttp mode on a free port (the kernel's, then listened on by the
// server: one more try if another process took it meanwhile), its output in web/server.log; cwd
// web/, where mcp_servers.sh looks for leftovers.
const webDir = join(h.work, "web");
mkdirSync(webDir);
const webLog = join(webDir, "server.log");
const freePort = () => new Promise((resolve, reject) => {
  const s = createServer();
  s.once("error", reject);
  s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => resolve(port)); });
});
let web = null; // {proc, port, exited: null or how it ended}
process.on("exit", () => { if (web && web.exited === null) web.proc.kill("SIGKILL"); }); // a watchdog's exit
async function startWeb() {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const port = await freePort();
    const fd = openSync(webLog, "w");
    const proc = spawn(process.execPath, [scripts.everything, "streamableHttp"], { cwd: webDir, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", fd, fd] });
    closeSync(fd);
    const w = { proc, port, exited: null };
    web = w;
    proc.on("exit", (code, signal) => { w.exited = signal ?? code; });
    const deadline = Date.now() + 15000;
    const up = () => readFileSync(webLog, "utf8").includes(`listening on port ${port}`);
    while (w.exited === null && !up() && Date.now() < deadline) await sleep(25);
    if (up()) return w;
    if (w.exited === null) proc.kill("SIGKILL");
    if (!readFileSync(webLog, "utf8").includes("already in use")) break;
  }
  throw new Error(`server-everything streamableHttp did not start: ${readFileSync(webLog, "utf8").slice(-300)}`);
}
const webStarted = startWeb();

// The public names, pinned: what tools/list of the pinned servers gives (docs/contract.md §18: mcp__<server>__<tool>;
// none needs the hash suffix). everything's simulate-research-query needs tasks and is left out (§20.1).
const TOOLS = {
  everything: ["echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-structured-content",
    "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging", "toggle-subscriber-updates",
    "trigger-long-running-operation"],
  filesystem: ["read_file", "read_text_file", "read_media_file", "read_multiple_files", "write_file", "edit_file", "create_directory",
    "list_directory", "list_directory_with_sizes", "directory_tree", "move_file", "search_files", "get_file_info",
    "list_allowed_directories"],
};
TOOLS.web = TOOLS.everything; // the same server over HTTP, our client capabilities the same

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
const answers = { "everything: echo": "allow", "web: echo": "allow", "filesystem: write_file": "reject", "everything: trigger-long-running-operation": "allow" };
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
web = await h.attempt("starting server-everything over Streamable HTTP", () => webStarted);
const webTap = web ? await httpTap(web.port) : null;
if (webTap) mcpServers.push({ type: "http", name: "web", url: `http://127.0.0.1:${webTap.port}/mcp`, headers: [{ name: "X-Acp-Test", value: SECRET }] });
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
  ["web: echo", "in_progress completed", "Echo: hello over http"],
  ["web: get-sum", "in_progress completed", "The sum of 3 and 4 is 7."],
]);
const env = t1.find((c) => c.title === "everything: get-env")?.text ?? "";
h.check(!env.includes("ACP_AGENT_"), "the server's environment holds ACP_AGENT_* variables (docs/contract.md §20.1: ours minus ACP_AGENT_*)");
h.check(env.includes("\"PATH\""), "the server's environment lacks PATH (docs/contract.md §20.1: ours minus ACP_AGENT_*)");
h.eq(said(1), "All the tools answered.", "turn 1's reply");
h.eq(existsSync(join(cwd, "sub", "new.txt")) ? readFileSync(join(cwd, "sub", "new.txt"), "utf8") : null, "written by the filesystem server\n", "sub/new.txt after write_file");
h.eq(readFileSync(outside, "utf8"), "outside the allowed directory\n", "the file outside the allowed directory");
h.eq(asks.length, 0, "permission requests in full-access");

// Turn 2: default mode asks for every MCP call.
await setMode("default");
await prompt("Now ask first.", "end_turn");
checkCalls(2, [
  ["everything: echo", "pending in_progress completed", "Echo: asked and allowed"],
  ["web: echo", "pending in_progress completed", "Echo: asked over http"],
  ["filesystem: write_file", "pending failed", "Error: the user rejected this tool call"],
]);
const asked2 = asks.filter(([n]) => n === 2).map(([, p]) => p);
h.eq(asked2.map((p) => p.toolCall?.title).join(", "), "everything: echo, web: echo, filesystem: write_file", "turn 2's permission requests");
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
// The web server is not the agent's: still up; stopped here (its session was DELETEd, below).
h.check(web?.exited === null, `the web server did not outlive the agent (it ended: ${web?.exited})`);
if (web?.exited === null) {
  web.proc.kill("SIGTERM");
  const deadline = Date.now() + 5000;
  while (web.exited === null && Date.now() < deadline) await sleep(25);
  h.check(web.exited !== null, "the web server did not stop within 5 s of SIGTERM");
}
await webTap?.close();

// What the agent logged: mcp/server events with the public names; the replay used up, never mismatched.
h.step("the session log");
const log = sessionId ? readFileSync(join(h.stateDir, "sessions", `${sessionId}.jsonl`), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
const events = log.filter((e) => e.type === "mcp/server").map((e) => e.data);
// server-everything sends tools/list_changed while its first tools/list is in flight (at
// notifications/initialized), so the agent lists again and logs ready again (docs/contract.md §18: effective
// from the next step); the last list is the one pinned.
for (const name of Object.keys(TOOLS)) {
  const mine = events.filter((e) => e.name === name);
  const states = mine.map((e) => e.state).join(" ");
  h.check(/^starting( ready)+ stopped$/.test(states), `the mcp/server states of ${name}: expected starting, ready (once or more), stopped; got ${JSON.stringify(states)}`);
  h.eq(JSON.stringify(mine.filter((e) => e.state === "ready").at(-1)?.tools), JSON.stringify(TOOLS[name].map((t) => `mcp__${name}__${t}`)), `${name}'s public tool names`);
}
const stderr = h.traces().map((p) => p.stderr).join("").split("\n");
const complaints = stderr.filter((l) => /^acp-agent: (warn|error):|Sanitizer|runtime error:/.test(l) || /^acp-agent: debug: \[mcp:[^\]]*\].*(error|invalid|unknown|unsupported)/i.test(l));
h.check(complaints.length === 0, `the agent's stderr: ${complaints.join(" | ").slice(0, 400)}`);
h.check(stderr.includes("acp-agent: info: mcp everything: tool simulate-research-query needs tasks, left out"),
  "no info line for everything's simulate-research-query (taskSupport required: left out, docs/contract.md §20.1)");
h.check(stderr.includes("acp-agent: debug: [mcp:web] http: DELETE: HTTP 200"), "the agent's stderr (at debug) lacks web's DELETE: HTTP 200");

// The ACP header's value (docs/contract.md §20.1: never logged or recorded): in no line the agent wrote, nor in
// its stderr at debug, nor in any file of its state directory (the session log). It did go out in
// session/new (so the search can find it).
h.step("the secret header value");
const agentLines = h.traces().flatMap((p) => readFileSync(p.file, "utf8").split("\n"));
h.check(agentLines.some((l) => l.startsWith(">> ") && l.includes(SECRET)), "the secret is not in the session/new the client sent (the search below would find nothing)");
h.check(!agentLines.some((l) => l.startsWith("<< ") && l.includes(SECRET)), "the agent wrote the secret header value on stdout");
h.check(!stderr.join("\n").includes(SECRET), "the secret header value is in the agent's stderr");
const stateFiles = (d) => readdirSync(d, { withFileTypes: true }).flatMap((f) => (f.isDirectory() ? stateFiles(join(d, f.name)) : [join(d, f.name)]));
const leaks = stateFiles(h.stateDir).filter((f) => readFileSync(f).includes(SECRET));
h.check(leaks.length === 0, `the secret header value is in the state directory: ${leaks.map((f) => f.slice(h.stateDir.length + 1)).join(", ")}`);
h.check(stateFiles(h.stateDir).some((f) => f.endsWith(".jsonl")), "no session log in the state directory");

// The MCP wire, as each server saw it: every line JSON-RPC; ours valid against the MCP SDK's schemas.
h.step("the MCP wire");
const wire = {};
let sentMcp = 0;
// Over HTTP, a message per POST body (">>"), and the replies' and the GET stream's messages ("<<").
const webLines = [];
(webTap?.exchanges ?? []).forEach((x, i) => {
  if (x.method === "POST") webLines.push(`>> ${x.body}`);
  for (const m of replyMessages(x.resHeaders?.["content-type"], x.resBody())) webLines.push(`<< ${"unparsed" in m ? m.unparsed : JSON.stringify(m)}`);
});
for (const name of Object.keys(TOOLS)) {
  wire[name] = [];
  const raw = name === "web" ? webLines : existsSync(wireLog(name)) ? readFileSync(wireLog(name), "utf8").split("\n").filter(Boolean) : [];
  raw.forEach((l, i) => {
    const from = l.slice(0, 2), where = `${name} wire ${name === "web" ? "message" : "line"} ${i + 1} (${from === ">>" ? "agent to server" : "server to agent"})`;
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
h.eq(called("web").map((m) => `${m.params?.name} ${JSON.stringify(m.params?.arguments)}`).join(", "),
  'echo {"message":"hello over http"}, get-sum {"a":3,"b":4}, echo {"message":"asked over http"}', "web's tools/call names and arguments");
const slow = called("everything").at(-1);
const cancels = wire.everything.filter((m) => m.from === ">>" && m.msg.method === "notifications/cancelled").map((m) => m.msg.params);
h.eq(JSON.stringify(cancels), JSON.stringify([{ requestId: slow?.id, reason: "cancelled" }]), "the notifications/cancelled everything got");

// The HTTP exchanges (docs/contract.md §20.1, MCP 2025-11-25 Transports): the ACP header on every request; the
// initialize POST without a session id, its reply with one; that id and the negotiated version on
// every request after it; POSTs accept JSON and SSE and carry JSON; a request's reply 200, a
// notification's or response's 202; one GET stream (200, SSE); the last request one DELETE (200).
// The server's log says the same from its side (it logs the session ids it saw).
h.step("the HTTP exchanges");
const ex = webTap?.exchanges ?? [];
const methodOf = (x) => { try { const m = JSON.parse(x.body); return m.method ?? (m.id !== undefined ? "response" : "?"); } catch { return "?"; } };
const sid = ex[0]?.resHeaders?.["mcp-session-id"];
h.eq(ex[0] && `${ex[0].method} ${methodOf(ex[0])}`, "POST initialize", "web's first HTTP request");
h.check(ex[0] && !("mcp-session-id" in ex[0].headers), "web's initialize POST carried an MCP-Session-Id");
h.check(typeof sid === "string" && sid.length > 0, "web's initialize reply had no MCP-Session-Id");
ex.forEach((x, i) => {
  const m = x.method === "POST" ? methodOf(x) : "";
  const what = `web HTTP request ${i + 1} (${x.method}${m ? ` ${m}` : ""})`;
  h.check(x.headers["x-acp-test"] === SECRET, `${what}: the ACP header X-Acp-Test is ${x.headers["x-acp-test"] === undefined ? "missing" : "not the session's value"}`);
  if (i > 0) {
    h.check(x.headers["mcp-session-id"] === sid, `${what}: MCP-Session-Id is ${x.headers["mcp-session-id"] === undefined ? "missing" : "not the one initialize got"}`);
    h.eq(x.headers["mcp-protocol-version"], "2025-11-25", `${what}: MCP-Protocol-Version`);
  }
  if (x.method === "POST") {
    h.check(/application\/json/.test(x.headers.accept ?? "") && /text\/event-stream/.test(x.headers.accept ?? ""), `${what}: Accept is ${JSON.stringify(x.headers.accept)}`);
    h.check(/^application\/json/.test(x.headers["content-type"] ?? ""), `${what}: Content-Type is ${JSON.stringify(x.headers["content-type"])}`);
    let isRequest = false;
    try { const b = JSON.parse(x.body); isRequest = typeof b.method === "string" && "id" in b; } catch { /* reported in the wire */ }
    h.eq(x.status, isRequest ? 200 : 202, `${what}: the HTTP status`);
  } else if (x.method === "GET") {
    h.eq(x.status, 200, `${what}: the HTTP status`);
    h.check(/text\/event-stream/.test(x.headers.accept ?? ""), `${what}: Accept is ${JSON.stringify(x.headers.accept)}`);
  } else if (x.method === "DELETE") {
    h.eq(x.status, 200, `${what}: the HTTP status`);
  } else h.fail(`${what}: a method the transport does not use`);
  h.check(x.error === null, `${what}: the tap's upstream request failed: ${x.error}`);
  h.eq(x.url, "/mcp", `${what}: the path`);
});
h.eq(ex.filter((x) => x.method === "GET").length, 1, "web's GET streams");
h.eq(ex.filter((x) => x.method === "DELETE").length, 1, "web's DELETEs");
h.eq(ex.at(-1)?.method, "DELETE", "web's last HTTP request");
const serverLog = existsSync(webLog) ? readFileSync(webLog, "utf8") : "";
for (const line of [`Session initialized with ID: ${sid}`, `Establishing new SSE stream for session ${sid}`, `Received session termination request for session ${sid}`])
  h.check(serverLog.includes(line), `the web server's log lacks "${line.replace(sid, "<the session id>")}"`);
h.check(!/error|Bad Request/i.test(serverLog), `the web server logged an error: ${(serverLog.split("\n").find((l) => /error|Bad Request/i.test(l)) ?? "").slice(0, 200)}`);

// Every line the agent wrote, against the ACP schema.
const { sdkVersion, checkDir } = schemaValidator();
const totals = { messages: 0, processes: 0, invalid: 0 };
const bad = [];
checkDir(h.traceDir, "schema", bad, totals);
for (const b of bad) h.fail(b);
h.check(totals.messages > 0, "no agent message was recorded");

const ncalls = [1, 2, 3].reduce((n, t) => n + calls(t).length, 0);
h.finish(`server-everything ${pkgVersion("@modelcontextprotocol/server-everything")} (stdio and Streamable HTTP: ${ex.length} HTTP requests), server-filesystem ${pkgVersion("@modelcontextprotocol/server-filesystem")}` +
  ` (MCP sdk ${pkgVersion("@modelcontextprotocol/sdk")}): ${ncalls} tool calls, ${asks.length} asks; ${totals.messages} agent messages valid against` +
  ` sdk ${sdkVersion} schema/v1, ${sentMcp} MCP messages sent valid against the MCP sdk's types; exit ${exitSecs} s; node ${process.versions.node}; ${((Date.now() - started) / 1000).toFixed(1)} s`);
