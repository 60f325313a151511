// A big stored session loaded by a client nobody here wrote (docs/decisions.md, "Loading at scan speed"): a 3.5 MB log, above the
// 512 KiB past which the agent reads it on a worker and rebuilds the conversation beside the
// replay (acp/load.c), with a compaction in it. Not deterministic, so that path runs. The newest
// SDK's client app loads it; every turn's user and agent text must come back in order, the
// response after all of them, and a prompt right after the load is answered from the
// conversation the worker rebuilt (over the window: it compacts first). Every line the agent wrote is validated by run.mjs.
import * as acp from "sdk-new";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";

const h = harness("big-load", { timeoutSeconds: 40 });
const sid = "00000000-0000-4000-8000-0000000000b1";
const turns = 1500;
const pad = "x".repeat(1000);
const userText = (t) => `question ${t}: ${pad}`;
const agentText = (t) => `answer ${t}: ${pad}`;

// The log, as the agent writes one (docs/contract.md §5.2).
const lines = [JSON.stringify({ type: "session", version: 1, id: sid, createdAt: 1, cwd: h.cwd, delegationDepth: 0 })];
let seq = 0;
const ev = (type, data) => lines.push(JSON.stringify({ seq: seq++, time: 1700000000000 + seq, type, data }));
ev("session/created", { mode: "default", model: "replay" });
for (let t = 1; t <= turns; t++) {
  ev("turn/start", { turn: t });
  ev("user/message", { id: `m${t}`, content: [{ type: "text", text: userText(t) }], source: { kind: "user" } });
  ev("step/start", { turn: t, step: 1 });
  ev("assistant/message", { turn: t, step: 1, id: `a${t}`, content: [{ type: "text", text: agentText(t) }], finish: "stop" });
  ev("step/end", { turn: t, step: 1 });
  ev("turn/end", { turn: t, reason: { kind: "completed" } });
  if (t === 1000)
    ev("context/compacted", { id: "compaction-1", summary: "A thousand questions, each answered.", through: seq - 1 });
}
mkdirSync(join(h.stateDir, "sessions"), { recursive: true });
writeFileSync(join(h.stateDir, "sessions", `${sid}.jsonl`), lines.join("\n") + "\n");
const recording = join(h.work, "big-load-recording.json");
// The replay model answers request n with reply n: the logged steps took the first ones. The
// conversation after the compaction (500 turns, about 1 MB) is over the default window, so the
// prompt compacts first: its summary reply is the script's second compaction (the log's is the
// first).
const replies = Array.from({ length: turns }, () => ({ text: "(logged)" })).concat([{ text: "Loaded, all of it." }]);
writeFileSync(recording, JSON.stringify({ version: 1, scripts: [{ agent: "root", replies,
  compactions: [{ text: "(logged)" }, { text: "Fifteen hundred questions, each answered." }] }] }));
delete process.env.ACP_AGENT_DETERMINISTIC;
process.env.ACP_AGENT_RECORDING = recording;

const a = spawnAgent(h);
const updates = [];
const conn = acp.client({ name: "acp-agent-clients-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => { if (params.sessionId === sid) updates.push(params.update); })
  .connect(acp.ndJsonStream(a.stdin, a.stdout));
await h.attempt("initialize", () => conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }));
h.step("session/load");
const loaded = await h.attempt("session/load of the big session", () =>
  conn.agent.request(acp.methods.agent.session.load, { sessionId: sid, cwd: h.cwd, mcpServers: [] }));
if (loaded !== undefined) {
  const text = (kind) => updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content?.text);
  const users = text("user_message_chunk"), agents = text("agent_message_chunk");
  h.eq(users.length, turns, "user_message_chunk updates before the load's response");
  h.eq(agents.length, turns, "agent_message_chunk updates before the load's response");
  let bad = 0;
  for (let t = 1; t <= turns; t++) if (users[t - 1] !== userText(t) || agents[t - 1] !== agentText(t)) bad++;
  h.eq(bad, 0, "turns replayed out of order or changed");
  h.step("a prompt right after the load");
  updates.length = 0;
  const r = await h.attempt("session/prompt after the load", () =>
    conn.agent.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "and now?" }] }));
  h.eq(r?.stopReason, "end_turn", "stop reason of the prompt after the load");
  h.eq(updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content?.text).join(""),
    "Loaded, all of it.", "the answer after the load");
  // The prompt saw the conversation the worker rebuilt: it was over the window, so it compacted.
  const log = readFileSync(join(h.stateDir, "sessions", `${sid}.jsonl`), "utf8");
  h.eq(log.split("\n").filter((l) => l.includes('"type":"context/compacted"')).length, 2,
    "compactions in the log after the prompt (the logged one, then the prompt's own)");
}
await stopAgent(h, a);
conn.close();
await h.settle("the client closed");
h.finish(`a ${(lines.join("\n").length / 1e6).toFixed(1)} MB session loaded off the loop (sdk ${pkgVersion("sdk-new")})`);
