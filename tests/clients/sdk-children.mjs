// The newest @agentclientprotocol/sdk's client app, from its unstable entrypoint (the one that knows
// the child-session types stabilized on 2026-11-20), advertising clientCapabilities.subagents
// (docs/contract.md §22): a foreground child that asks before it runs a command, seen as a session
// of its own; a method naming the child refused; then, after a restart, a load that replays the
// child in place. What the client rejects or logs fails the test; run.mjs validates every line.
import * as acp from "sdk-new/unstable";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { harness, pkgVersion, spawnAgent, stopAgent, updateText } from "./lib.mjs";

const h = harness("sdk-children");
const version = pkgVersion("sdk-new");
const recording = join(h.work, "children-recording.json");
writeFileSync(recording, JSON.stringify({ version: 1, scripts: [
  { agent: "root", replies: [
    { tool_calls: [{ name: "subagent", arguments: { description: "List files", prompt: "List the workspace with ls.", run_in_background: false } }] },
    { expect: "listed", text: "The helper reported back." }] },
  { agent: "label:List files", replies: [
    { tool_calls: [{ name: "bash", arguments: { command: "ls", description: "List the workspace" } }] },
    { text: "listed the files" }] }] }));
process.env.ACP_AGENT_RECORDING = recording;

async function open() {
  const a = spawnAgent(h);
  const delivered = [], asks = [];
  const app = acp.client({ name: "acp-agent-clients-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      delivered.push({ sessionId: params.sessionId, update: params.update });
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asks.push(params);
      return { outcome: { outcome: "selected", optionId: params.options[0].optionId } };
    });
  const conn = app.connect(acp.ndJsonStream(a.stdin, a.stdout));
  const init = await conn.agent.request(acp.methods.agent.initialize,
    { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { subagents: {} } });
  h.eq(init.protocolVersion, 1, "initialize protocolVersion");
  return { a, conn, agent: conn.agent, delivered, asks };
}
const close = async (s) => { await stopAgent(h, s.a); s.conn.close(); };
const announced = (delivered, root) => delivered.filter((d) => d.sessionId === root && d.update.sessionUpdate === "subagent_update");

h.step("live");
let s = await open();
const root = (await s.agent.request(acp.methods.agent.session.new, { cwd: h.cwd, mcpServers: [] })).sessionId;
const answer = await h.attempt("the prompt", () => s.agent.request(acp.methods.agent.session.prompt,
  { sessionId: root, prompt: [{ type: "text", text: "Have a helper list the files." }] }));
h.eq(answer?.stopReason, "end_turn", "the prompt's stopReason");
const ann = announced(s.delivered, root);
const child = ann[0]?.update.sessionId;
h.check(child && child !== root, "no subagent_update announced a child on the root's session");
h.eq(ann[0]?.update.title, "List files", "the announcement's title");
h.check(ann[0]?.update.capabilities?.cancel !== undefined, "the announcement does not offer cancel");
const first = s.delivered.findIndex((d) => d.sessionId === child || JSON.stringify(d.update).includes(`"sessionId":"${child}"`));
h.check(first >= 0 && s.delivered[first].update.sessionUpdate === "subagent_update", "something named the child before its announcement");
h.check(s.delivered.some((d) => d.sessionId === child && d.update.sessionUpdate === "tool_call" && d.update.status === "pending"),
  "the child's own tool call did not come on its session, pending");
h.check(s.delivered.some((d) => d.sessionId === child && updateText(d.update) === "listed the files"),
  "the child's answer did not stream on its session");
const firstPrompt = (delivered) => delivered.some((d) => d.sessionId === child && d.update.sessionUpdate === "session_message" &&
  d.update.messageId === "msg-1" && d.update.senderSessionId === root && d.update.recipientSessionId === child &&
  d.update.content?.[0]?.text === "List the workspace with ls.");
h.check(firstPrompt(s.delivered), "the child's first prompt did not come as a session_message on its session");
h.eq(s.asks.length, 1, "permission asks");
h.eq(s.asks[0]?.sessionId, child, "the child's ask's sessionId");
h.check(!s.asks[0]?.toolCall?.toolCallId?.includes("/"), "the child's ask kept the flattened toolCallId");
const states = ann.map((d) => d.update.state?.state).filter(Boolean);
h.check(JSON.stringify(states) === JSON.stringify(["running", "requires_action", "running", "idle"]),
  `the child's states: ${JSON.stringify(states)}`);
h.eq(ann.at(-1)?.update.state?.stopReason, "end_turn", "the child's last stopReason");
h.check(!s.delivered.some((d) => d.sessionId === root && d.update._meta?.acpAgent && d.update.status === "in_progress" &&
  d.update.content?.some((c) => c.type === "content")), "foreground progress text went to a client that shows children");
h.check(s.delivered.some((d) => d.sessionId === root && d.update.sessionUpdate === "tool_call_update"),
  "no update of the delegating call reached the client");
// The SDK drops the `session` content block (2.4.0 predates it: an invalid item, skipped without a
// word), so the link is read from what the agent wrote; run.mjs validates it with the stabilization.
await close(s);
const wrote = h.traces().flatMap((p) => p.updates);
const link = wrote.find((d) => d.sessionId === root && d.update.sessionUpdate === "tool_call_update" &&
  d.update.status === "completed" && d.update.content?.[0]?.type === "session");
h.eq(link?.update.content[0].sessionId, child, "the delegating call's session link");
s = await open();
const refused = await s.agent.request(acp.methods.agent.session.prompt,
  { sessionId: child, prompt: [{ type: "text", text: "hello child" }] }).then(() => null, (e) => e);
h.eq(refused?.code, -32602, "a prompt to the child: error code");
h.eq(refused?.data?.kind, "child_session", "a prompt to the child: data.kind");
await close(s);

h.step("load");
s = await open();
await h.attempt("session/load", () => s.agent.request(acp.methods.agent.session.load, { sessionId: root, cwd: h.cwd, mcpServers: [] }));
const order = s.delivered.map((d) => `${d.sessionId === root ? "root" : d.sessionId === child ? "child" : "other"}:${d.update.sessionUpdate}`);
const at = (what) => order.indexOf(what);
h.check(at("root:subagent_update") >= 0 && at("root:subagent_update") < at("root:tool_call"),
  `the load did not announce the child before the call that made it: ${order.join(" ")}`);
h.check(at("root:tool_call") < at("child:agent_message_chunk"), `the child's history did not follow its call: ${order.join(" ")}`);
h.check(s.delivered.some((d) => d.sessionId === child && updateText(d.update) === "listed the files"),
  "the load did not replay the child's answer on its session");
h.check(firstPrompt(s.delivered), "the load did not replay the child's first prompt as a session_message");
await close(s);
await h.settle("the last stop");
h.finish(`sdk ${version} client app with subagents (a child's stream, first prompt, ask, refusal and load)`);
