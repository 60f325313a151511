// The newest @agentclientprotocol/sdk (installed as "sdk-new"). From 2.0 on the SDK has no
// ClientSideConnection any more (MIGRATION_STABLE_UNSTABLE.md: "ClientSideConnection →
// client().onRequest(...).onNotification(...).connect(...)"), so this drives its replacement, the
// client app API, with the stable v1 entrypoint, exactly as that guide shows.
import * as acp from "sdk-new";
import { harness, pkgVersion, spawnAgent, stopAgent } from "./lib.mjs";
import { runFlow } from "./flow.mjs";

const h = harness("sdk-new");
const version = pkgVersion("sdk-new");

const adapter = {
  async open() {
    const a = spawnAgent(h);
    const delivered = [];
    const app = acp.client({ name: "acp-agent-clients-test" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        delivered.push({ sessionId: params.sessionId, update: params.update });
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
        ({ outcome: { outcome: "selected", optionId: params.options[0].optionId } }));
    const conn = app.connect(acp.ndJsonStream(a.stdin, a.stdout));
    const agent = conn.agent;
    const init = await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    h.eq(init.protocolVersion, 1, "initialize protocolVersion");
    h.check(init.agentCapabilities?.loadSession === true, "initialize does not advertise loadSession");
    h.check(init.agentCapabilities?.sessionCapabilities?.resume !== undefined, "initialize does not advertise sessionCapabilities.resume");
    return {
      delivered,
      newSession: async (cwd) => (await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId,
      resume: (sessionId, cwd) => agent.request(acp.methods.agent.session.resume, { sessionId, cwd, mcpServers: [] }),
      load: (sessionId, cwd) => agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }),
      prompt: (sessionId, text) => agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
      async close() {
        await stopAgent(h, a);
        conn.close();
      },
    };
  },
};

await runFlow(h, adapter);
h.finish(`sdk ${version} client app`);
