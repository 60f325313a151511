// Validates everything the agent wrote on stdout, in a folder of tap.mjs traces, against the
// official ACP v1 JSON schema (the newest SDK's schema/v1/schema.json, "sdk-new" in node_modules, with
// the 2026-11-20 stabilizations of stabilized.mjs),
// choosing the definition by method as tests/acp-schema does: the root schema accepts anything
// through its extension branches. Requests use their params' definition, responses the result's
// of the request they answer (by id), errors the Error definition.
import Ajv2020 from "ajv/dist/2020.js";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { stabilize } from "./stabilized.mjs";

export function schemaValidator() {
  const require = createRequire(import.meta.url);
  const schemaFile = require.resolve("sdk-new/schema/v1/schema.json");
  const schema = stabilize(JSON.parse(readFileSync(schemaFile, "utf8")),
    JSON.parse(readFileSync(require.resolve("sdk-new/schema/v1/schema.unstable.json"), "utf8")));
  const sdkVersion = JSON.parse(readFileSync(join(dirname(schemaFile), "..", "..", "package.json"), "utf8")).version;
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema(schema, "acp");
  const defs = {};
  for (const [name, def] of Object.entries(schema.$defs)) {
    if (!def["x-method"]) continue;
    (defs[def["x-method"]] ??= {})[name.endsWith("Response") ? "result" : "params"] = name;
  }
  const check = (def, value) => {
    const v = ajv.getSchema(`acp#/$defs/${def}`);
    return v(value) ? null : `${def}: ${ajv.errorsText(v.errors)}`;
  };
  // Checks every trace in dir; each problem is pushed on failures as "<label>: <what>". Counts add
  // to totals ({messages, processes, invalid}).
  const checkDir = (dir, label, failures, totals) => {
    if (!existsSync(dir)) return;
    const files = readdirSync(dir).filter((f) => f.endsWith(".trace")).sort();
    files.forEach((file, index) => {
      totals.processes++;
      const sent = new Map(); // client request id -> method
      readFileSync(join(dir, file), "utf8").split("\n").forEach((raw, i) => {
        if (raw.length < 3) return;
        const from = raw.slice(0, 2), text = raw.slice(3);
        let msg;
        try { msg = JSON.parse(text); } catch {
          if (from === "<<") { totals.invalid++; failures.push(`${label}: agent process ${index + 1} line ${i + 1}: the agent wrote a line that is not JSON: ${text.slice(0, 80)}`); }
          return;
        }
        if (from === ">>") {
          if (msg && typeof msg.method === "string" && "id" in msg) sent.set(JSON.stringify(msg.id), msg.method);
          return;
        }
        totals.messages++;
        const problems = [];
        if (!msg || typeof msg !== "object" || Array.isArray(msg)) problems.push("not a JSON object");
        else {
          if (msg.jsonrpc !== "2.0") problems.push('jsonrpc is not "2.0"');
          if (typeof msg.method === "string") {
            const d = defs[msg.method];
            if (d?.params) { const e = check(d.params, msg.params ?? {}); if (e) problems.push(e); }
            else if (!d && !msg.method.startsWith("_")) problems.push(`unknown method ${msg.method}`);
          } else if ("id" in msg) {
            const method = sent.get(JSON.stringify(msg.id));
            if ("error" in msg) { const e = check("Error", msg.error); if (e) problems.push(e); }
            else if (!("result" in msg)) problems.push("a response without result or error");
            else if (method && defs[method]?.result) { const e = check(defs[method].result, msg.result); if (e) problems.push(e); }
            else if (!method) problems.push(`a response to id ${JSON.stringify(msg.id)}, which the client never sent`);
          } else problems.push("neither a request, a notification nor a response");
        }
        if (problems.length) {
          totals.invalid++;
          failures.push(`${label}: agent process ${index + 1} line ${i + 1}: schema: ${problems.join("; ").slice(0, 300)}`);
        }
      });
    });
  };
  return { sdkVersion, checkDir };
}
