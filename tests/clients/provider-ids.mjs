// Tool call ids the provider makes (docs/decisions.md, "Field fixes"): some OpenAI-compatible servers
// number their calls per response, so the same id ("call_0") comes back every turn. A client keys
// tool calls by toolCallId, so the agent must present ids of its own, unique within the session
// across restarts. The replay provider makes no ids (the agent numbers them), so this driver
// serves the model itself: a scripted OpenAI-compatible server on 127.0.0.1 (docs/contract.md §7.3), six
// answers in all, closed at the end. The client is the newest SDK's client app.
import * as acp from "sdk-new";
import { createServer } from "node:http";
import { checkSessionTraces, harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";

const h = harness("provider-ids");
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const callList = () => chunk({ tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "list_agents", arguments: "{}" } }] }) + chunk({}, "tool_calls");
const say = (text) => chunk({ content: text }) + chunk({}, "stop");
const answers = [callList(), say("First."), callList(), say("Second."), callList(), say("Third.")];
let served = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    if (req.method !== "POST" || !req.url.endsWith("/chat/completions") || served >= answers.length) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `unexpected request ${req.method} ${req.url} (#${served + 1})` } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(answers[served++] + "data: [DONE]\n\n");
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
delete process.env.ACP_AGENT_RECORDING;
Object.assign(process.env, {
  ACP_AGENT_MODEL_PROVIDER: "openai",
  ACP_AGENT_API_KEY: "test-key-not-secret",
  ACP_AGENT_BASE_URL: `http://127.0.0.1:${server.address().port}`,
});

async function open() {
  const a = spawnAgent(h);
  const conn = acp.client({ name: "acp-agent-clients-test" })
    .onNotification(acp.methods.client.session.update, () => {})
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
      ({ outcome: { outcome: "selected", optionId: params.options[0].optionId } }))
    .connect(acp.ndJsonStream(a.stdin, a.stdout));
  await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  return { agent: conn.agent, close: async () => { await stopAgent(h, a); conn.close(); } };
}
const prompt = (c, sessionId, text) => h.attempt(`session/prompt ${JSON.stringify(text)}`, async () => {
  const r = await c.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  h.eq(r.stopReason, "end_turn", `stop reason of ${JSON.stringify(text)}`);
});

h.step("process 1");
let c = await open();
const sid = (await h.attempt("session/new", () => c.agent.request(acp.methods.agent.session.new, { cwd: h.cwd, mcpServers: [] })))?.sessionId;
if (sid) {
  await prompt(c, sid, "first turn");
  await prompt(c, sid, "second turn");
}
await c.close();
await h.settle("the client closed");
if (sid) {
  h.step("process 2");
  c = await open();
  if (await h.attempt("session/resume after the restart", () => c.agent.request(acp.methods.agent.session.resume, { sessionId: sid, cwd: h.cwd, mcpServers: [] })) !== undefined)
    await prompt(c, sid, "third turn");
  await c.close();
  await h.settle("the client closed");
  h.step("traces");
  checkSessionTraces(h, h.traces(), sid, { onlyToolCallIds: true });
}
server.close();
h.eq(served, answers.length, "model requests served");
h.finish(`provider ids (sdk ${pkgVersion("sdk-new")})`);
