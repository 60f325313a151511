// acpx (third-party CLI, on its own @agentclientprotocol/sdk 1.x), run on the Node 22 it needs, as a
// user would run it against a custom agent: `acpx --agent <command> sessions new`, then one
// `acpx prompt` per turn. Each command is a new client process, and the agent is restarted too:
// acpx's queue owner keeps the agent only for --ttl seconds after a prompt, and the driver waits
// for it to go. acpx resumes the saved session (session/resume) in every later process; when that
// fails it quietly makes a new session and goes on, so the traces are checked for that.
// Its state (~/.acpx) lives in a fresh HOME.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { SCRIPT, checkDelivered, checkSessionTraces, harness, joinText, pkgVersion } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const h = harness("acpx", { timeoutSeconds: 40 });
const home = join(h.work, "home");
mkdirSync(home, { recursive: true });
const consoleLog = join(h.work, "console.log");
const cli = join(here, "..", "node_modules", "acpx", "dist", "cli.js");
const env = {
  ...process.env,
  HOME: home,
  NODE_OPTIONS: `--import=${join(here, "console-hook.mjs")}`,
  CLIENTS_CONSOLE_LOG: consoleLog,
};
delete env.XDG_CONFIG_HOME;
// acpx keeps its queue sockets in /tmp/acpx-<sha256(HOME), 10 hex digits> (its ipc paths.ts);
// that one is ours alone (a fresh HOME), so it goes when the driver does.
const sockets = join("/tmp", `acpx-${createHash("sha256").update(home).digest("hex").slice(0, 10)}`);
process.on("exit", () => rmSync(sockets, { recursive: true, force: true }));

function acpx(...args) {
  const argv = [cli, "--agent", h.tap.join(" "), "--cwd", h.cwd, "--ttl", "0.2", "--format", "json", "--approve-all", "--timeout", "15", ...args];
  return new Promise((resolve) => {
    const p = spawn(process.execPath, argv, { cwd: h.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { err += d; });
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

const parse = (out) => out.split("\n").filter((l) => l.trim()).flatMap((l) => {
  try { return [JSON.parse(l)]; } catch { h.fail(`acpx printed a line that is not JSON in --format json: ${l.slice(0, 120)}`); return []; }
});

// acpx's own stderr: its "[acpx] ..." progress lines are fine; anything else (an SDK complaint,
// a stack) or an "[acpx] error" line is a failure.
function checkStderr(what, err) {
  for (const line of err.split("\n")) {
    if (!line.trim()) continue;
    if (line.startsWith("[acpx] ") && !/^\[acpx\] (error|warn)/i.test(line)) continue;
    h.fail(`acpx ${what} wrote on stderr: ${line.slice(0, 300)}`);
  }
}

let procsSeen = 0;
async function run(what, ...args) {
  h.step(`acpx ${what}`);
  const r = await acpx(...args);
  checkStderr(what, r.err);
  h.eq(r.code, 0, `exit code of acpx ${what}`);
  await h.settle(`acpx ${what} returned (its queue owner's --ttl is 0.2 s)`, 8000);
  const procs = h.traces();
  h.eq(procs.length, procsSeen + 1, `agent processes after acpx ${what}`);
  procsSeen = procs.length;
  return { ...r, msgs: parse(r.out), proc: procs.at(-1) };
}

const created = await run("sessions new", "sessions", "new");
const sid = created.msgs.find((m) => m.action === "session_ensured")?.acpxSessionId;
h.check(sid, `acpx sessions new printed no session id: ${created.out.slice(0, 200)}`);

async function turn(text, answer) {
  const r = await run(`prompt ${JSON.stringify(text)}`, "prompt", text);
  const updates = r.msgs.filter((m) => m.method === "session/update" && m.params?.sessionId === sid).map((m) => m.params.update);
  const answered = r.msgs.find((m) => "id" in m && m.result?.stopReason !== undefined);
  h.eq(answered?.result?.stopReason, "end_turn", `stop reason acpx printed for ${JSON.stringify(text)}`);
  const got = joinText(updates);
  h.check(got.endsWith(answer), `the agent_message_chunk text acpx printed for ${JSON.stringify(text)} is ${JSON.stringify(got.slice(-120))}, expected it to end with ${JSON.stringify(answer)}`);
  const prompted = r.proc?.requests.filter((q) => q.method === "session/prompt") ?? [];
  h.check(prompted.length === 1 && prompted[0].params.sessionId === sid, `acpx did not prompt the session it created (${sid}) in this process: ${JSON.stringify(prompted.map((q) => q.params.sessionId))}`);
  if (r.proc) checkDelivered(h, r.proc, updates, sid);
}

if (sid) {
  await turn(SCRIPT.hello, SCRIPT.helloAnswer);
  await turn(SCRIPT.agents, SCRIPT.agentsAnswer);
  await turn(SCRIPT.afterResume, SCRIPT.afterResumeAnswer);
}

h.step("traces");
const procs = h.traces();
for (const p of procs.slice(1)) {
  const resume = p.requests.find((q) => q.method === "session/resume" || q.method === "session/load");
  h.check(resume?.params?.sessionId === sid, `acpx did not resume ${sid} in agent process ${p.index}`);
  const fallback = p.requests.filter((q) => q.method === "session/new");
  // A failed resume is reported with its fallback by checkSessionTraces; any other new session is not.
  if (fallback.length && !resume?.response?.error) h.fail(`acpx made a new session (session/new) in agent process ${p.index} although it had resumed ${sid}`);
}
if (sid) checkSessionTraces(h, procs, sid);
for (const p of procs) h.check(p.exit?.startsWith("code 0"), `agent process ${p.index} ended with ${p.exit ?? "no exit recorded"} (docs/contract.md §2)`);
if (existsSync(consoleLog)) {
  for (const line of readFileSync(consoleLog, "utf8").split("\n").filter(Boolean)) h.fail(`an acpx process logged: ${line.slice(0, 300)}`);
}
h.finish(`acpx ${pkgVersion("acpx")} (sdk ${pkgVersion("acpx/node_modules/@agentclientprotocol/sdk")})`);
