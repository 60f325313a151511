// The newest @agentclientprotocol/sdk's client app, from its unstable entrypoint (the one that knows
// the plan operations stabilized on 2026-11-20), for the rest of ACP v1 (docs/contract.md §26,
// §27): a client advertising clientCapabilities.plan starts a session with an additional
// directory, sends a prompt with an image (the model writes a task list), sees plan_update; after
// a restart a load replays the image as it was sent and the plan; then session/delete removes the
// session (a load after it, and a second delete, are -32002) and its blob stays. run.mjs validates every line.
import * as acp from "sdk-new/unstable";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";

const h = harness("sdk-more");
const version = pkgVersion("sdk-new");
const recording = join(h.work, "more-recording.json");
writeFileSync(recording, JSON.stringify({ version: 1, scripts: [
  { agent: "root", replies: [
    { tool_calls: [{ name: "todo_write", arguments: { todos: [
      { content: "Look at the picture", status: "completed" },
      { content: "Describe it", status: "in_progress", priority: "high" }] } }] },
    { text: "A single pixel." }] }] }));
process.env.ACP_AGENT_RECORDING = recording;
const extra = join(h.work, "extra");
mkdirSync(extra, { recursive: true });
// A 1x1 PNG.
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII=";

async function open() {
  const a = spawnAgent(h);
  const delivered = [];
  const app = acp.client({ name: "acp-agent-clients-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      delivered.push({ sessionId: params.sessionId, update: params.update });
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
      ({ outcome: { outcome: "selected", optionId: params.options[0].optionId } }));
  const conn = app.connect(acp.ndJsonStream(a.stdin, a.stdout));
  const init = await conn.agent.request(acp.methods.agent.initialize,
    { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { plan: {} } });
  return { a, conn, agent: conn.agent, delivered, init };
}
const close = async (s) => { await stopAgent(h, s.a); s.conn.close(); };
const drained = () => new Promise((resolve) => setTimeout(resolve, 10));
const plans = (s, sid) => s.delivered.filter((d) => d.sessionId === sid && d.update.sessionUpdate === "plan_update");

h.step("live");
let s = await open();
const caps = s.init.agentCapabilities ?? {};
h.eq(caps.promptCapabilities?.image, true, "promptCapabilities.image");
h.check(caps.sessionCapabilities?.delete !== undefined, "sessionCapabilities.delete is not advertised");
h.check(caps.sessionCapabilities?.additionalDirectories !== undefined, "sessionCapabilities.additionalDirectories is not advertised");
const sid = (await h.attempt("session/new with an additional directory", () => s.agent.request(acp.methods.agent.session.new,
  { cwd: h.cwd, mcpServers: [], additionalDirectories: [extra] })))?.sessionId;
const answer = await h.attempt("a prompt with an image", () => s.agent.request(acp.methods.agent.session.prompt,
  { sessionId: sid, prompt: [{ type: "text", text: "What is in this picture?" }, { type: "image", mimeType: "image/png", data: png }] }));
await drained();
h.eq(answer?.stopReason, "end_turn", "the image prompt's stopReason");
const live = plans(s, sid);
h.eq(live.length, 1, "plan_update updates");
h.eq(live[0]?.update.plan?.entries?.length, 2, "the plan's entries");
h.eq(live[0]?.update.plan?.entries?.[1]?.priority, "high", "the second entry's priority");
h.check(s.delivered.some((d) => d.sessionId === sid && d.update.sessionUpdate === "session_info_update" &&
  d.update.title === "What is in this picture?"), "no session_info_update with the title");
const refused = await s.agent.request(acp.methods.agent.session.prompt,
  { sessionId: sid, prompt: [{ type: "image", mimeType: "image/jpeg", data: png }] }).then(() => null, (e) => e);
h.eq(refused?.code, -32602, "an image whose type lies: error code");
await close(s);
const blobs = join(h.stateDir, "blobs");
h.eq(existsSync(blobs) ? readdirSync(blobs).length : 0, 1, "blobs stored");

h.step("load");
s = await open();
await h.attempt("session/load", () => s.agent.request(acp.methods.agent.session.load,
  { sessionId: sid, cwd: h.cwd, mcpServers: [] }));
await drained();
const image = s.delivered.find((d) => d.sessionId === sid && d.update.sessionUpdate === "user_message_chunk" &&
  d.update.content?.type === "image");
h.eq(image?.update.content?.data, png, "the replayed image's data");
h.eq(image?.update.content?.mimeType, "image/png", "the replayed image's mimeType");
h.eq(plans(s, sid).length, 1, "plan_update updates in the replay");

h.step("delete");
const deleted = await h.attempt("session/delete", () => s.agent.request(acp.methods.agent.session.delete, { sessionId: sid }));
h.check(deleted !== undefined, "session/delete was not answered");
const gone = await s.agent.request(acp.methods.agent.session.load, { sessionId: sid, cwd: h.cwd, mcpServers: [] })
  .then(() => null, (e) => e);
h.eq(gone?.code, -32002, "a load after the delete: error code");
// The SDK resolves a -32002 to session/delete as done (its request() is idempotent there): what the
// agent answered is read from the trace.
await h.attempt("a second session/delete", () => s.agent.request(acp.methods.agent.session.delete, { sessionId: sid }));
await close(s);
const deletes = h.traces().at(-1)?.requests.filter((r) => r.method === "session/delete") ?? [];
h.eq(deletes.length, 2, "session/delete requests in the last process");
h.check(deletes[0]?.response && "result" in deletes[0].response, "the first session/delete was not answered with a result");
h.eq(deletes[1]?.response?.error?.code, -32002, "a second delete: the agent's error code");
h.eq(readdirSync(blobs).length, 1, "blobs after the delete (kept: content-addressed, maybe shared)");
await h.settle("the last stop");
h.finish(`sdk ${version} client app with plans, an image, an additional directory and session/delete`);
