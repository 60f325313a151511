// acp-factory (third-party; built on @agentclientprotocol/sdk 0.18), used as its README says:
// AgentFactory.register a custom agent, spawn it, createSession, iterate session.prompt(), close().
// Its public API continues a session after a restart with loadSession only (its client handler is
// private, so a resumed session could not be prompted through it); the updates the agent sends
// outside a prompt (commands, load's replay) reach the caller with the next prompt's updates.
//
// What its SDK validated and handed to acp-factory is watched at acp-factory's handler, and that
// is what the checks use. Session.prompt() then loses an update now and then on its own: once the
// prompt's answer has arrived, the race in its loop can take an update off its queue and drop it
// (Promise.race of the answer and the queue's next()). That is acp-factory's bug, not the agent's
// (every update precedes its answer on the wire, docs/contract.md §3.1, which the traces check), so it is a
// note in the summary, not a failure.
import { AgentFactory } from "acp-factory";
import { harness, pkgVersion } from "./lib.mjs";
import { runFlow } from "./flow.mjs";

const h = harness("acp-factory");
AgentFactory.register("acp-agent", { command: h.tap[0], args: [h.tap[1]], env: {} });
const lost = []; // updates acp-factory got from its SDK and never yielded

const adapter = {
  replayWithNextPrompt: true,
  async open() {
    const agent = await AgentFactory.spawn("acp-agent", { permissionMode: "auto-approve" });
    h.check(agent.capabilities?.loadSession === true, "acp-factory sees no loadSession capability");
    const delivered = [];
    const handler = agent.clientHandler; // observed, not changed
    const onUpdate = handler.sessionUpdate.bind(handler);
    handler.sessionUpdate = (params) => {
      delivered.push({ sessionId: params.sessionId, update: params.update });
      return onUpdate(params);
    };
    const sessions = new Map();
    return {
      delivered,
      async newSession(cwd) {
        const s = await agent.createSession(cwd);
        sessions.set(s.id, s);
        return s.id;
      },
      async load(sessionId, cwd) {
        const s = await agent.loadSession(sessionId, cwd);
        sessions.set(s.id, s);
        return {};
      },
      async prompt(sessionId, text) {
        const yielded = new Set();
        for await (const update of sessions.get(sessionId).prompt(text)) yielded.add(update);
        // acp-factory yields the very objects its handler got; those it got for this session
        // and never yielded (before or during this prompt) it has lost.
        for (const d of delivered) {
          if (d.sessionId !== sessionId || d.accounted) continue;
          d.accounted = true;
          if (!yielded.has(d.update)) lost.push(d.update.sessionUpdate);
        }
        // Session.prompt() keeps the stop reason to itself; the agent's answer is in the trace.
        const req = h.traces().at(-1)?.requests.filter((r) => r.method === "session/prompt" && r.params.sessionId === sessionId).at(-1);
        return req?.response?.result ?? {};
      },
      close: () => agent.close(),
    };
  },
};

await runFlow(h, adapter);
h.finish(`acp-factory ${pkgVersion("acp-factory")} (sdk ${pkgVersion("@agentclientprotocol/sdk")})` +
  (lost.length ? `; note: its Session.prompt() lost ${lost.join(", ")} (its own race, see factory.mjs)` : ""));
