// Stands between the agent and one stdio MCP server, as tap.mjs stands between a client and the
// agent: each wire line goes to LOG as ">> " (agent to server) or "<< " (server to agent). Bytes
// pass through unchanged and at once; stderr is the server's own. Stdin EOF reaches the server;
// this process ends when the server does, with its exit code (or the signal that ended it, again).
// Usage: node mcp-tap.mjs LOG COMMAND [ARG...]
import { spawn } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";

const [log, command, ...args] = process.argv.slice(2);
if (!log || !command) {
  process.stderr.write("mcp-tap: usage: mcp-tap.mjs LOG COMMAND [ARG...]\n");
  process.exit(2);
}
writeFileSync(log, "");
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });

function splitter(prefix) {
  let pending = "";
  return {
    push(chunk) {
      pending += chunk.toString("utf8");
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        appendFileSync(log, `${prefix} ${pending.slice(0, nl)}\n`);
        pending = pending.slice(nl + 1);
      }
    },
    flush() {
      if (pending.length) appendFileSync(log, `${prefix} ${pending}\n`);
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
  child.stdin.end();
});
process.stdin.on("error", () => child.stdin.end());
child.stdin.on("error", () => {});
child.stdout.on("data", (chunk) => {
  down.push(chunk);
  process.stdout.write(chunk);
});
process.stdout.on("error", () => {});
// The agent signals the whole group (docs/contract.md §18's ladder); the server gets it from there too.
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
child.on("close", (code, signal) => {
  down.flush();
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
