// Runs every client driver against the agent, one after another, then validates everything the
// agent wrote on stdout in all their traces against the official ACP v1 JSON schema (the newest
// SDK's schema/v1/schema.json), choosing the definition by method as tests/acp-schema does: the root
// schema accepts anything through its extension branches. Prints "clients: FAIL <client>: <what>"
// per failure, then one summary line. Usage: node run.mjs AGENT WORKDIR
import Ajv2020 from "ajv/dist/2020.js";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [agent, work] = process.argv.slice(2);
const drivers = [
  ["acp-factory", "factory.mjs"],
  ["acpx", "acpx.mjs"],
  ["sdk-old", "sdk-old.mjs"],
  ["sdk-new", "sdk-new.mjs"],
  ["provider-ids", "provider-ids.mjs"],
  ["workspace", "workspace.mjs"],
];
const failures = [];
const summaries = [];

function runDriver(name, file) {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(here, file)], {
      cwd: dir,
      env: { ...process.env, CLIENTS_AGENT: agent, CLIENTS_WORK: dir, CLIENTS_RECORDING: join(here, "recording.json") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "", err = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { err += d; });
    const timer = setTimeout(() => { failures.push(`${name}: the driver ran over 50 s and was killed`); p.kill("SIGKILL"); }, 50000);
    p.on("close", (code, signal) => {
      clearTimeout(timer);
      let ok = false;
      for (const line of out.split("\n")) {
        if (line.startsWith("FAIL ")) failures.push(`${name}: ${line.slice(5)}`);
        else if (line.startsWith("OK ")) { ok = true; summaries.push(line.slice(3)); }
      }
      if (!ok || code !== 0) failures.push(`${name}: the driver ended with ${code ?? signal} without finishing: ${err.trim().split("\n").slice(-3).join(" | ").slice(0, 400)}`);
      else if (err.trim()) failures.push(`${name}: the driver wrote on stderr: ${err.trim().replace(/\s+/g, " ").slice(0, 300)}`);
      resolve();
    });
  });
}

const started = Date.now();
for (const [name, file] of drivers) await runDriver(name, file);

// Schema validation of every agent line, in every driver's traces.
const require = createRequire(import.meta.url);
const schemaFile = require.resolve("sdk-new/schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
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
let messages = 0, processes = 0, invalid = 0;
for (const [name] of drivers) {
  const dir = join(work, name, "trace");
  if (!existsSync(dir)) continue;
  const files = readdirSync(dir).filter((f) => f.endsWith(".trace")).sort();
  files.forEach((file, index) => {
    processes++;
    const sent = new Map(); // client request id -> method
    readFileSync(join(dir, file), "utf8").split("\n").forEach((raw, i) => {
      if (raw.length < 3) return;
      const from = raw.slice(0, 2), text = raw.slice(3);
      let msg;
      try { msg = JSON.parse(text); } catch {
        if (from === "<<") { invalid++; failures.push(`${name}: agent process ${index + 1} line ${i + 1}: the agent wrote a line that is not JSON: ${text.slice(0, 80)}`); }
        return;
      }
      if (from === ">>") {
        if (msg && typeof msg.method === "string" && "id" in msg) sent.set(JSON.stringify(msg.id), msg.method);
        return;
      }
      messages++;
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
        invalid++;
        failures.push(`${name}: agent process ${index + 1} line ${i + 1}: schema: ${problems.join("; ").slice(0, 300)}`);
      }
    });
  });
}
if (!messages) failures.push("no agent message was recorded at all");

const secs = ((Date.now() - started) / 1000).toFixed(1);
for (const f of failures) console.log(`clients: FAIL ${f}`);
if (failures.length) {
  console.log(`clients: FAILED (${failures.length} problem${failures.length > 1 ? "s" : ""}; ${processes} agent processes, ${messages} agent messages, ${invalid} invalid; ${secs} s; CLIENTS_KEEP=1 keeps the traces)`);
  process.exit(1);
}
console.log(`clients: ok (${summaries.join("; ")}; ${processes} agent processes, ${messages} agent messages valid against sdk ${sdkVersion} schema/v1; node ${process.versions.node}; ${secs} s)`);
