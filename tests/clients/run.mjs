// Runs every client driver against the agent, one after another, then validates everything the
// agent wrote on stdout in all their traces against the official ACP v1 JSON schema (the newest
// SDK's schema/v1/schema.json), choosing the definition by method as tests/acp-schema does: the root
// schema accepts anything through its extension branches. Prints "clients: FAIL <client>: <what>"
// per failure, then one summary line. Usage: node run.mjs AGENT WORKDIR
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { schemaValidator } from "./schema.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const [agent, work] = process.argv.slice(2);
const drivers = [
  ["acp-factory", "factory.mjs"],
  ["acpx", "acpx.mjs"],
  ["sdk-old", "sdk-old.mjs"],
  ["sdk-new", "sdk-new.mjs"],
  ["sdk-children", "sdk-children.mjs"],
  ["sdk-more", "sdk-more.mjs"],
  ["provider-ids", "provider-ids.mjs"],
  ["workspace", "workspace.mjs"],
  ["big-load", "big-load.mjs"],
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
const { sdkVersion, checkDir } = schemaValidator();
const totals = { messages: 0, processes: 0, invalid: 0 };
for (const [name] of drivers) checkDir(join(work, name, "trace"), name, failures, totals);
const { messages, processes, invalid } = totals;
if (!messages) failures.push("no agent message was recorded at all");

const secs = ((Date.now() - started) / 1000).toFixed(1);
for (const f of failures) console.log(`clients: FAIL ${f}`);
if (failures.length) {
  console.log(`clients: FAILED (${failures.length} problem${failures.length > 1 ? "s" : ""}; ${processes} agent processes, ${messages} agent messages, ${invalid} invalid; ${secs} s; CLIENTS_KEEP=1 keeps the traces)`);
  process.exit(1);
}
console.log(`clients: ok (${summaries.join("; ")}; ${processes} agent processes, ${messages} agent messages valid against sdk ${sdkVersion} schema/v1; node ${process.versions.node}; ${secs} s)`);
