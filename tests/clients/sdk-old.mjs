// An older @agentclientprotocol/sdk (installed as "sdk-old"), through its ClientSideConnection, the
// way clients built on it connect. 0.5.1 is the last release whose zod schema types rawInput and
// rawOutput as objects (z.record); from 0.7.0 on they are z.unknown(). It has no session/resume
// method (only load), so that one request goes on the same connection by hand (rawChannel); the
// updates it brings still pass through the SDK's validation.
import * as acp from "sdk-old";
import { harness, pkgVersion, rawChannel, spawnAgent, stopAgent, zodExplainer } from "./lib.mjs";
import * as schema from "sdk-old/dist/schema.js";
import { runFlow } from "./flow.mjs";

// 0.5.1 predates session_info_update, which every client is sent (a session's title).
const h = harness("sdk-old", { explain: zodExplainer(schema.sessionNotificationSchema), newer: ["session_info_update"] });
const version = pkgVersion("sdk-old");

const adapter = {
  async open() {
    const a = spawnAgent(h);
    const delivered = [];
    const client = {
      async sessionUpdate(params) {
        delivered.push({ sessionId: params.sessionId, update: params.update });
      },
      async requestPermission(params) {
        return { outcome: { outcome: "selected", optionId: params.options[0].optionId } };
      },
    };
    const raw = rawChannel(acp.ndJsonStream(a.stdin, a.stdout));
    const conn = new acp.ClientSideConnection(() => client, raw.stream);
    const init = await conn.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    h.eq(init.protocolVersion, 1, "initialize protocolVersion");
    h.check(init.agentCapabilities?.loadSession === true, "initialize does not advertise loadSession");
    return {
      delivered,
      newSession: async (cwd) => (await conn.newSession({ cwd, mcpServers: [] })).sessionId,
      resume: (sessionId, cwd) => raw.request("session/resume", { sessionId, cwd, mcpServers: [] }),
      load: (sessionId, cwd) => conn.loadSession({ sessionId, cwd, mcpServers: [] }),
      prompt: (sessionId, text) => conn.prompt({ sessionId, prompt: [{ type: "text", text }] }),
      close: () => stopAgent(h, a),
    };
  },
};

await runFlow(h, adapter);
h.finish(`sdk ${version} ClientSideConnection`);
