#!/usr/bin/env node
// Checks scenario traces (">> " client->agent, "<< " agent->client lines) against the
// official ACP v1 schema. The root schema accepts anything through its extension
// branches, so each message is checked against the definition its method names:
// request params by method, results by the method of the request they answer.
import Ajv2020 from "ajv/dist/2020.js";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { stabilize } from "./stabilized.mjs";

const require = createRequire(import.meta.url);
const schemaFile = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
// ACP v1 as stabilized on 2026-11-20 (stabilized.mjs); ACP_SCHEMA=2.4.0 checks against schema.json alone.
if ((process.env.ACP_SCHEMA ?? "2026-11-20") !== "2.4.0")
  stabilize(schema, JSON.parse(readFileSync(require.resolve("@agentclientprotocol/sdk/schema/v1/schema.unstable.json"), "utf8")));
const ajv = new Ajv2020({ strict: false, validateFormats: false });
ajv.addSchema(schema, "acp");

const defs = {};
for (const [name, def] of Object.entries(schema.$defs)) {
  if (!def["x-method"]) continue;
  const slot = (defs[def["x-method"]] ??= {});
  slot[name.endsWith("Response") ? "result" : "params"] = name;
}
const validate = (def, value) => {
  const v = ajv.getSchema(`acp#/$defs/${def}`);
  return v(value) ? null : `${def}: ${ajv.errorsText(v.errors)}`;
};

const dir = process.argv[2];
const files = readdirSync(dir).filter((f) => f.endsWith(".trace")).sort();
let total = 0, invalid = 0;
// docs/contract.md §22.1: nothing the agent sends names a session the client does not know: a
// root it created, loaded, resumed or named itself (kept across restarts: the client's), or a child
// announced (subagent_update) since the agent last answered initialize (its answer, not the request:
// a trace interleaves the client's lines by time, and lines the agent wrote before it read the
// request may follow the request there). Checked on the agent's lines of every trace
// that holds the client's lines too (the crash loop's hold the agent's alone, and checks it itself).
const namedSessions = (msg) => {
  const u = msg.params?.update, ids = [];
  if (typeof msg.params?.sessionId === "string") ids.push(["params.sessionId", msg.params.sessionId]);
  if (u?.sessionUpdate === "session_message") {
    for (const k of ["senderSessionId", "recipientSessionId"]) if (typeof u[k] === "string") ids.push([k, u[k]]);
  }
  for (const c of u?.content instanceof Array ? u.content : []) if (c?.type === "session") ids.push(["a session link", c.sessionId]);
  return ids;
};
for (const file of files) {
  const sent = { ">>": new Map(), "<<": new Map() };
  const roots = new Set(), children = new Set();
  const knows = (id) => roots.has(id) || children.has(id);
  const text = readFileSync(join(dir, file), "utf8");
  const both = text.startsWith(">> ") || text.includes("\n>> ");
  text.split("\n").forEach((raw, i) => {
    if (raw.length < 3) return;
    const dir2 = raw.slice(0, 2), text = raw.slice(3);
    let msg;
    // Client lines of bad-input scenarios are malformed on purpose; only agent lines must parse.
    try { msg = JSON.parse(text); } catch {
      if (dir2 === "<<") { invalid++; total++; console.log(`${file}:${i + 1}: agent line is not JSON`); }
      return;
    }
    if (dir2 === ">>" && (typeof msg !== "object" || msg === null || Array.isArray(msg) || msg.jsonrpc !== "2.0")) return;
    total++;
    const problems = [];
    if (dir2 === ">>") {
      if (typeof msg.params?.sessionId === "string") roots.add(msg.params.sessionId);
    } else {
      if (typeof msg.result?.sessionId === "string") roots.add(msg.result.sessionId);
      for (const [where, id] of both ? namedSessions(msg) : [])
        if (!knows(id)) problems.push(`${where} names session ${id} before the client knows it`);
      if (msg.params?.update?.sessionUpdate === "subagent_update") children.add(msg.params.update.sessionId);
    }
    if (msg.jsonrpc !== "2.0") problems.push('jsonrpc is not "2.0"');
    if (typeof msg.method === "string") {
      const d = defs[msg.method];
      if ("id" in msg) sent[dir2].set(JSON.stringify(msg.id), msg.method);
      if (d?.params && !(dir2 === ">>" && !d.result && "id" in msg)) {
        // Client requests in bad-input scenarios may be invalid on purpose; agent output never.
        const e = validate(d.params, msg.params ?? {});
        if (e && dir2 === "<<") problems.push(e);
      } else if (!d && dir2 === "<<" && !msg.method.startsWith("_")) problems.push(`unknown method ${msg.method}`);
    } else if ("id" in msg) {
      const other = dir2 === ">>" ? "<<" : ">>";
      const method = sent[other].get(JSON.stringify(msg.id));
      if (dir2 === "<<" && method === "initialize") children.clear();
      if ("error" in msg) { const e = validate("Error", msg.error); if (e) problems.push(e); }
      else if (!("result" in msg)) problems.push("a response without result or error");
      else if (method && defs[method]?.result) { const e = validate(defs[method].result, msg.result); if (e) problems.push(e); }
    } else problems.push("neither a request, a notification nor a response");
    if (problems.length && dir2 === "<<") { invalid++; console.log(`${file}:${i + 1}: ${problems.join("; ")}`); }
  });
}
console.log(`acp schema check: ${total} messages in ${files.length} traces, ${invalid} invalid (${schemaFile.replace(/.*node_modules\//, "")}${process.env.ACP_SCHEMA === "2.4.0" ? "" : " with the 2026-11-20 stabilizations"})`);
process.exit(invalid || files.length === 0 ? 1 : 0);
