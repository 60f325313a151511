// ACP v1 as stabilized on 2026-11-20 (docs/contract.md §22, §26): subagent sessions and plan
// operations are still filed under the SDK release's schema.unstable.json, so their definitions, and
// the ones they refer to, are moved into the stable schema; the `session` tool-call content is in
// neither file and is defined here. Shared by tests/acp-schema/validate.mjs and tests/clients.
const STABILIZED = ["SessionUpdate", "ClientCapabilities", "SubagentUpdate", "SubagentCapabilities",
  "SubagentSessionCapabilities", "StateUpdate", "RunningStateUpdate", "IdleStateUpdate",
  "RequiresActionStateUpdate", "UnknownStateUpdate", "ErrorStopReason", "SessionMessage",
  "SessionMessageChunk", "MessageId", "PlanUpdate", "PlanUpdateContent", "PlanItems", "PlanMarkdown",
  "PlanRemoved", "PlanId", "PlanCapabilities", "SessionCancelCapabilities", "Usage"];

// Changes schema (the parsed schema.json) in place; unstable: the parsed schema.unstable.json.
export function stabilize(schema, unstable) {
  const refs = (def) => [...JSON.stringify(def).matchAll(/"#\/\$defs\/(\w+)"/g)].map((m) => m[1]);
  const todo = [];
  for (const name of STABILIZED) {
    if (!unstable.$defs[name]) continue;
    // the two that exist in both grow; the others are new
    if (name === "SessionUpdate" || name === "ClientCapabilities" || !schema.$defs[name]) {
      schema.$defs[name] = unstable.$defs[name];
      todo.push(name);
    }
  }
  while (todo.length)
    for (const r of refs(schema.$defs[todo.pop()]))
      if (!schema.$defs[r] && unstable.$defs[r]) { schema.$defs[r] = unstable.$defs[r]; todo.push(r); }
  const content = schema.$defs.ToolCallContent;
  if (content?.oneOf && !content.oneOf.some((v) => v.properties?.type?.const === "session"))
    content.oneOf.push({ type: "object", additionalProperties: false, required: ["type", "sessionId"],
      properties: { type: { type: "string", const: "session" }, sessionId: { $ref: "#/$defs/SessionId" },
        _meta: { type: ["object", "null"], additionalProperties: true } } });
  return schema;
}
