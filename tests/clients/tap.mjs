// Stands in for the agent between a client and acp-agent, so every client (in-process SDKs and
// CLIs that spawn their own agent, like acpx) is watched the same way: each wire line goes to
// $CLIENTS_TRACE_DIR/<time>-<pid>.trace as ">> " (client to agent) or "<< " (agent to client),
// the agent's stderr to the same name with .err, and the way the process ended to .exit.
// Bytes pass through unchanged and at once; only the copies are split into lines.
// Environment: CLIENTS_AGENT (the binary), CLIENTS_TRACE_DIR; the ACP_AGENT_* settings pass on.
import { spawn } from "node:child_process";
import { appendFileSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const agent = process.env.CLIENTS_AGENT;
const dir = process.env.CLIENTS_TRACE_DIR;
if (!agent || !dir) {
  process.stderr.write("tap: CLIENTS_AGENT and CLIENTS_TRACE_DIR must be set\n");
  process.exit(2);
}
const base = join(dir, `${process.hrtime.bigint()}-${process.pid}`);
const trace = `${base}.trace`;
writeFileSync(trace, "");
writeFileSync(`${base}.pid`, `${process.pid}\n`);
const err = openSync(`${base}.err`, "a");
// Its own process group: a client that signals our group (acp-factory does) must reach the agent
// once, through the forwarding below, not twice.
const child = spawn(agent, process.argv.slice(2), { stdio: ["pipe", "pipe", err], detached: true });
let how = "";

function splitter(prefix) {
  let pending = "";
  return {
    push(chunk) {
      pending += chunk.toString("utf8");
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        appendFileSync(trace, `${prefix} ${pending.slice(0, nl)}\n`);
        pending = pending.slice(nl + 1);
      }
    },
    flush() {
      if (pending.length) appendFileSync(trace, `${prefix} ${pending}\n`);
      pending = "";
    },
  };
}

const up = splitter(">>");
const down = splitter("<<");
process.stdin.on("data", (chunk) => {
  up.push(chunk);
  if (!child.stdin.destroyed) child.stdin.write(chunk);
});
process.stdin.on("end", () => {
  up.flush();
  how ||= "stdin EOF";
  child.stdin.end();
});
process.stdin.on("error", () => child.stdin.end());
child.stdin.on("error", () => {}); // the agent went away first; its exit is reported below
child.stdout.on("data", (chunk) => {
  down.push(chunk);
  process.stdout.write(chunk);
});
process.stdout.on("error", () => {}); // the client went away; keep tracing until the agent exits

for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(sig, () => {
    how ||= sig;
    child.kill(sig);
  });
}
child.on("close", (code, signal) => {
  down.flush();
  writeFileSync(`${base}.exit`, `${code === null ? `signal ${signal}` : `code ${code}`} after ${how || "nothing"}\n`);
  // Let stdout drain before leaving; a client that stopped reading must not keep us alive.
  const done = () => process.exit(code ?? 1);
  if (process.stdout.writableLength === 0) done();
  else {
    process.stdout.once("drain", done);
    setTimeout(done, 500).unref();
  }
});
