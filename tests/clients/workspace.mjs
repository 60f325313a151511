// The workspace tools against a client nobody here wrote (docs/decisions.md, "Architecture and the workspace"): the newest SDK's
// client app advertises fs.readTextFile and fs.writeTextFile and answers the agent's requests to
// it, as an editor does: reads from its buffers (which differ from the disk), writes into them,
// and a permission prompt that allows. The agent must read and write through the editor only,
// ask before the write with the diff shown, and present the call pending, then in progress, then
// completed; the disk stays as it was.
import * as acp from "sdk-new";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";

const h = harness("workspace");
const version = pkgVersion("sdk-new");
const disk = join(h.cwd, "a.txt");
writeFileSync(disk, "on disk\n");
const rec = join(h.cwd, "..", "workspace-recording.json");
writeFileSync(rec, JSON.stringify({ version: 1, scripts: [{ agent: "root", replies: [
  { tool_calls: [{ name: "read", arguments: { file_path: "a.txt" } }] },
  { expect: "     1\tin the editor", tool_calls: [{ name: "write", arguments: { file_path: "a.txt", content: "in the editor\nand more\n" } }] },
  { expect: "wrote a.txt (23 bytes)", text: "Rewritten through the editor." },
] }] }));
process.env.ACP_AGENT_RECORDING = rec;

const buffers = new Map([[disk, "in the editor\n"]]);
const asked = [];
const updates = [];
const a = spawnAgent(h);
const conn = acp.client({ name: "acp-agent-clients-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => { updates.push(params.update); })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    if (!buffers.has(params.path)) throw new Error(`not found: ${params.path}`);
    return { content: buffers.get(params.path) };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => { buffers.set(params.path, params.content); return {}; })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    return { outcome: { outcome: "selected", optionId: "allow" } };
  })
  .connect(acp.ndJsonStream(a.stdin, a.stdout));
const agent = conn.agent;
await h.attempt("initialize", () => agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } }));
const created = await h.attempt("session/new", () => agent.request(acp.methods.agent.session.new, { cwd: h.cwd, mcpServers: [] }));
h.eq(created?.modes?.currentModeId, "default", "the new session's mode");
h.check(Array.isArray(created?.configOptions) && created.configOptions.some((o) => o.id === "mode"), "configOptions has no mode select");
const r = await h.attempt("session/prompt", () => agent.request(acp.methods.agent.session.prompt, { sessionId: created.sessionId,
  prompt: [{ type: "text", text: "Rewrite a.txt." }] }));
h.eq(r?.stopReason, "end_turn", "the turn's stop reason");
h.eq(buffers.get(disk), "in the editor\nand more\n", "the editor's buffer after the write");
h.eq(readFileSync(disk, "utf8"), "on disk\n", "the file on disk (the editor writes it, not the agent)");
h.eq(asked.length, 1, "permission requests");
const tc = asked[0]?.toolCall;
h.eq(tc?.title, "Write a.txt", "the ask's title");
h.eq(tc?.content?.[0]?.type, "diff", "the ask shows the diff");
h.eq(tc?.content?.[0]?.oldText, "in the editor\n", "the diff's old text is the editor's");
h.eq(asked[0]?.options?.map((o) => o.kind).join(","), "allow_once,allow_always,reject_once,reject_always", "the options in order");
const statuses = updates.filter((u) => u.toolCallId === tc?.toolCallId && u.status).map((u) => u.status).join(" ");
h.eq(statuses, "pending in_progress completed", "the write's statuses");
await stopAgent(h, a);
conn.close();
h.finish(`sdk ${version} fs and permission requests`);
