// Shared harness for the client drivers. A driver runs one client through the agent and reports on
// stdout, one line each: "FAIL <what>" per failure, then "OK <summary>". Anything the client itself
// logs through console.error/console.warn (the SDKs report rejected messages that way and then drop
// them) counts as a failure, and so does an unhandled rejection.
// Environment from run.mjs: CLIENTS_AGENT, CLIENTS_WORK (this driver's fresh directory),
// CLIENTS_RECORDING.
import { mkdirSync, readdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { inspect } from "node:util";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const here = dirname(fileURLToPath(import.meta.url));

const oneLine = (s, max = 400) => {
  const t = String(s).replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
};

// For a "Error handling notification" log of an SDK that names the message (0.x does), says which
// field its own zod schema refused: the union member for the update's kind, parsed alone.
export function zodExplainer(notificationSchema) {
  return (args) => {
    const params = args.find((a) => a && typeof a === "object" && a.method === "session/update")?.params;
    const update = params?.update;
    const options = notificationSchema?.shape?.update?.options;
    if (!update || !options) return null;
    const member = options.find((o) => o?.shape?.sessionUpdate?.value === update.sessionUpdate);
    if (!member) return { key: rejectKey(update), text: `it rejected a ${update.sessionUpdate} update, a kind it does not know, and dropped it` };
    const r = member.safeParse(update);
    if (r.success) return null;
    const issues = r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    return {
      key: rejectKey(update),
      text: `it rejected the ${update.sessionUpdate} update${update.toolCallId ? ` of toolCallId ${update.toolCallId}` : ""} (${issues.join("; ")}) and dropped it`,
    };
  };
}

// newer: update kinds the client predates (ACP v1 added them after its release) that it drops with
// a log line; each drop is counted and said in the summary, not a failure. Only kinds the contract
// sends to every client belong here (docs/decisions.md, "An old SDK and session_info_update").
export function harness(name, { explain, timeoutSeconds = 20, newer = [] } = {}) {
  const work = process.env.CLIENTS_WORK;
  const agentBin = process.env.CLIENTS_AGENT;
  const recording = process.env.CLIENTS_RECORDING;
  if (!work || !agentBin || !recording) throw new Error("CLIENTS_WORK, CLIENTS_AGENT and CLIENTS_RECORDING must be set");
  const traceDir = join(work, "trace");
  const stateDir = join(work, "state");
  const cwd = join(work, "cwd");
  for (const d of [traceDir, stateDir, cwd]) mkdirSync(d, { recursive: true });

  // The agent is started by the client, through tap.mjs; everything it needs is in the environment.
  delete process.env.ACP_AGENT_API_KEY;
  Object.assign(process.env, {
    ACP_AGENT_MODEL_PROVIDER: "replay",
    ACP_AGENT_RECORDING: recording,
    ACP_AGENT_DETERMINISTIC: "1",
    ACP_AGENT_STATE_DIR: stateDir,
    CLIENTS_AGENT: agentBin,
    CLIENTS_TRACE_DIR: traceDir,
  });

  const failures = [];
  const explained = new Set(); // updates whose rejection the client's log already reported
  let step = "start";
  const fail = (msg) => failures.push(`${oneLine(msg)} [at ${step}]`);

  // The SDKs' own complaints: they log and carry on, so a log line is the only trace of a drop.
  const dropped = {};	// newer kind -> how many the client dropped
  const captured = (kind) => (...args) => {
    const text = args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 8, breakLength: Infinity }))).join(" ");
    const why = explain?.(args);
    if (why?.key) explained.add(why.key);
    const kindOf = args.find((a) => a && typeof a === "object" && a.method === "session/update")?.params?.update?.sessionUpdate;
    if (why && newer.includes(kindOf) && why.text.endsWith("a kind it does not know, and dropped it")) {
      dropped[kindOf] = (dropped[kindOf] ?? 0) + 1;
      return;
    }
    fail(`the client logged (console.${kind}): ${describeLog(text)}${why ? `: ${why.text}` : ""}`);
  };
  console.error = captured("error");
  console.warn = captured("warn");
  process.on("unhandledRejection", (e) => fail(`unhandled rejection: ${e?.stack ?? e}`));

  const h = {
    name,
    work,
    cwd,
    stateDir,
    traceDir,
    tap: [process.execPath, join(here, "tap.mjs")],
    fail,
    step(s) { step = s; },
    check(cond, msg) { if (!cond) fail(msg); return !!cond; },
    eq(actual, expected, what) {
      if (actual !== expected) fail(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
    },
    // Runs `fn`, turning a thrown error into a failure line; returns undefined then.
    async attempt(what, fn) {
      try {
        return await fn();
      } catch (e) {
        fail(`${what} failed: ${describeError(e)}`);
        return undefined;
      }
    },
    traces: () => readTraces(traceDir),
    // Waits until every agent process the client started has ended (at most `ms`); one that
    // does not is reported and killed, by its own pid.
    async settle(what, ms = 5000) {
      const deadline = Date.now() + ms;
      const running = () => readdirSync(traceDir).filter((f) => f.endsWith(".pid") && !existsSync(join(traceDir, f.replace(/\.pid$/, ".exit"))));
      while (running().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      for (const f of running()) {
        const pid = Number(readFileSync(join(traceDir, f), "utf8"));
        fail(`the agent process (tap pid ${pid}) was still running ${ms / 1000} s after ${what}`);
        try { process.kill(pid, "SIGKILL"); } catch { /* already gone */ }
        writeFileSync(join(traceDir, f.replace(/\.pid$/, ".exit")), "killed by the test\n");
      }
    },
    finish(summary) {
      for (const f of failures) process.stdout.write(`FAIL ${f}\n`);
      const drops = Object.entries(dropped).map(([k, n]) => `${n} ${k} dropped as newer than it`).join(", ");
      process.stdout.write(`OK ${summary}${drops ? ` (${drops})` : ""}\n`);
      process.exit(0);
    },
    failures,
    explained,
  };
  const watchdog = setTimeout(() => {
    fail(`the driver timed out (${timeoutSeconds} s)`);
    h.finish("timed out");
  }, timeoutSeconds * 1000);
  watchdog.unref();
  return h;
}

export function describeError(e) {
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const data = e.data === undefined ? "" : ` ${inspect(e.data, { depth: 6, breakLength: Infinity })}`;
    return oneLine(`JSON-RPC ${e.code} ${e.message}${data}`);
  }
  return oneLine(e?.message ?? e);
}

// Shortens an SDK log line to what matters: which update, and what the validator said.
function describeLog(text) {
  const kind = /sessionUpdate: '([a-z_]+)'/.exec(text)?.[1];
  const issues = [...text.matchAll(/path: \[([^\]]*)\][^}]*?message: '([^']*)'/g)].map((m) => `${m[1].replace(/[' ]/g, "")}: ${m[2]}`);
  const head = text.split(/[{[]/, 1)[0].trim();
  if (kind || issues.length) return `${head}${kind ? ` (${kind})` : ""}${issues.length ? `: ${[...new Set(issues)].slice(0, 3).join("; ")}` : ""}`;
  return oneLine(text, 300);
}

// One entry per agent process the clients started (in start order): the requests the client sent
// with their answers, and the session/update notifications with the request that was pending.
export function readTraces(dir) {
  if (!existsSync(dir)) return [];
  const names = readdirSync(dir).filter((f) => f.endsWith(".trace"));
  names.sort((a, b) => {
    const x = BigInt(a.split("-")[0]), y = BigInt(b.split("-")[0]);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return names.map((file, index) => {
    const base = join(dir, file.replace(/\.trace$/, ""));
    const proc = { index: index + 1, file: join(dir, file), requests: [], updates: [], lines: 0 };
    proc.exit = existsSync(`${base}.exit`) ? readFileSync(`${base}.exit`, "utf8").trim() : null;
    proc.stderr = existsSync(`${base}.err`) ? readFileSync(`${base}.err`, "utf8") : "";
    const byId = new Map();
    const pending = []; // client requests without an answer yet, oldest first
    for (const raw of readFileSync(proc.file, "utf8").split("\n")) {
      if (raw.length < 3) continue;
      const dirn = raw.slice(0, 2);
      let msg;
      try { msg = JSON.parse(raw.slice(3)); } catch { continue; } // run.mjs reports bad agent lines
      proc.lines++;
      if (dirn === ">>" && msg && typeof msg.method === "string" && "id" in msg) {
        const req = { id: msg.id, method: msg.method, params: msg.params ?? {}, seq: proc.lines };
        proc.requests.push(req);
        byId.set(JSON.stringify(msg.id), req);
        pending.push(req);
      } else if (dirn === "<<" && msg && msg.method === "session/update") {
        const sid = msg.params?.sessionId;
        const during = [...pending].reverse().find((r) => r.params?.sessionId === sid && (r.method === "session/prompt" || r.method === "session/load"));
        proc.updates.push({ sessionId: sid, update: msg.params?.update ?? {}, during, seq: proc.lines });
      } else if (dirn === "<<" && msg && !("method" in msg) && "id" in msg) {
        const req = byId.get(JSON.stringify(msg.id));
        if (req) {
          req.response = msg;
          req.answeredAt = proc.lines;
          pending.splice(pending.indexOf(req), 1);
        }
      }
    }
    return proc;
  });
}

export const promptText = (req) => (req?.params?.prompt ?? []).filter((b) => b?.type === "text").map((b) => b.text).join("");
export const phase = (u) => (u.during ? (u.during.method === "session/load" ? "session/load replay" : `the prompt "${promptText(u.during)}"`) : "outside any prompt");
export const updateText = (u) => (u?.content?.type === "text" ? u.content.text : "");

// A key that survives an SDK's parsing (which may drop unknown fields): kind, ids and text.
const rejectKey = (u) => `${u.sessionUpdate}\u0001${u.toolCallId ?? ""}`;
const updateKey = (u) => [u.sessionUpdate, u.toolCallId ?? "", updateText(u), u.status ?? ""].join("\u0001");

// Every update the agent wrote on this process's stdout must have reached the client's handler.
export function checkDelivered(h, proc, delivered, sessionId) {
  if (!proc) { h.fail("no agent process trace to compare the delivered updates with"); return; }
  const want = new Map();
  for (const u of proc.updates.filter((x) => x.sessionId === sessionId)) {
    const k = updateKey(u.update);
    if (!want.has(k)) want.set(k, []);
    want.get(k).push(u);
  }
  for (const u of delivered) {
    const list = want.get(updateKey(u));
    if (list?.length) list.shift();
  }
  const lost = new Map();
  for (const list of want.values()) {
    for (const u of list) {
      if (h.explained.has(rejectKey(u.update))) continue;
      const k = `${u.update.sessionUpdate} during ${phase(u)}`;
      lost.set(k, [...(lost.get(k) ?? []), u]);
    }
  }
  for (const [k, list] of lost) {
    const ids = [...new Set(list.map((u) => u.update.toolCallId).filter(Boolean))];
    h.fail(`dropped update: the agent sent ${list.length} ${k} (process ${proc.index}${ids.length ? `, toolCallId ${ids.join(", ")}` : ""}) that the client never delivered`);
  }
}

// Checks every trace of one session: resume and load answered with a result, the commands
// advertised after new, resume and load (docs/contract.md §3.6, §20), toolCallIds unique across the session's
// live tool calls (docs/contract.md §20; load replays the same calls and does not count).
export function checkSessionTraces(h, procs, sessionId, { onlyToolCallIds = false } = {}) {
  const seen = new Map();
  for (const proc of procs) {
    const opens = onlyToolCallIds ? [] : proc.requests.filter((r) => ["session/new", "session/resume", "session/load"].includes(r.method));
    for (const r of opens) {
      const sid = r.method === "session/new" ? r.response?.result?.sessionId : r.params.sessionId;
      if (sid !== sessionId) continue;
      if (!r.response) { h.fail(`${r.method} (process ${proc.index}) got no answer`); continue; }
      if (r.response.error) {
        const e = r.response.error;
        const instead = proc.requests.some((o) => o.method === "session/new" && o.seq > r.seq);
        h.fail(`${r.method} of ${sid} after the restart failed (process ${proc.index}): ${e.code} ${e.message}${e.data ? ` ${JSON.stringify(e.data)}` : ""}` +
          (instead ? "; the client then quietly made a new session (session/new) and went on in it" : ""));
        continue;
      }
      const next = opens.find((o) => o.seq > r.seq && o.answeredAt);
      const advertised = proc.updates.some((u) => u.sessionId === sid && u.update.sessionUpdate === "available_commands_update" &&
        u.seq > r.answeredAt && (!next || u.seq < next.answeredAt));
      if (!advertised) h.fail(`no available_commands_update after ${r.method} (process ${proc.index}; docs/contract.md ${r.method === "session/resume" ? "§20" : "§3.6"})`);
      if (r.method === "session/resume") {
        const nextReq = proc.requests.find((o) => o.seq > r.seq);
        const replayed = proc.updates.filter((u) => u.sessionId === sid && u.seq > r.seq && (!nextReq || u.seq < nextReq.seq) &&
          /^(user_message_chunk|agent_message_chunk|agent_thought_chunk|tool_call|tool_call_update)$/.test(u.update.sessionUpdate));
        if (replayed.length) h.fail(`session/resume replayed ${replayed.length} history update(s) (process ${proc.index}; docs/contract.md §3.3: like load without the replay)`);
      }
    }
    // No subagents run here, so no turn starts on its own (docs/contract.md §3.4): a turn's updates all come
    // before its answer (docs/contract.md §3.1), or a client that stops listening at the answer loses them.
    const late = proc.updates.filter((u) => u.sessionId === sessionId && !u.during &&
      /^(user_message_chunk|agent_message_chunk|agent_thought_chunk|tool_call|tool_call_update)$/.test(u.update.sessionUpdate));
    const afterResume = (u) => proc.requests.some((r) => r.method === "session/resume" && r.seq < u.seq && !proc.requests.some((o) => o.seq > r.seq && o.seq < u.seq));
    if (late.some((u) => !afterResume(u))) h.fail(`the agent sent ${late.filter((u) => !afterResume(u)).length} turn update(s) outside any prompt or load (process ${proc.index}; docs/contract.md §3.1)`);
    for (const u of proc.updates) {
      if (u.sessionId !== sessionId || u.update.sessionUpdate !== "tool_call" || u.during?.method !== "session/prompt") continue;
      const id = u.update.toolCallId;
      const where = `${phase(u)} (process ${proc.index})`;
      if (seen.has(id)) h.fail(`toolCallId "${id}" names two different tool calls of one session: in ${seen.get(id)} and in ${where} (docs/contract.md §20: unique within the session across restarts)`);
      else seen.set(id, where);
    }
  }
}

// What the load replay must show (docs/contract.md §3.5): the human prompts as user_message_chunk and the
// assistant's text as agent_message_chunk, in the order they happened.
export function checkReplay(h, updates, expected) {
  const got = [];
  for (const u of updates) {
    const kind = u.sessionUpdate === "user_message_chunk" ? "user" : u.sessionUpdate === "agent_message_chunk" ? "agent" : null;
    if (!kind) continue;
    if (got.length && got[got.length - 1].kind === kind) got[got.length - 1].text += updateText(u);
    else got.push({ kind, text: updateText(u) });
  }
  let at = 0;
  for (const e of expected) {
    const i = got.findIndex((g, j) => j >= at && g.kind === e.kind && g.text.includes(e.text));
    if (i < 0) {
      h.fail(`session/load replay lacks the ${e.kind} message ${JSON.stringify(e.text)} (in order; it replayed ${JSON.stringify(got.map((g) => `${g.kind}: ${g.text.slice(0, 40)}`))})`);
      return;
    }
    at = i + 1;
  }
}

export const joinText = (updates) => updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map(updateText).join("");

// The conversation every driver holds, and what the recording answers (recording.json).
export const SCRIPT = {
  hello: "hello, client",
  helloAnswer: "Hello from the replay model: no subagents yet.",
  agents: "/agents",
  agentsAnswer: "(no subagents)",
  afterResume: "after resume: are you still there?",
  afterResumeAnswer: "Resumed from disk with the whole conversation.",
  afterLoad: "after load: one more",
  afterLoadAnswer: "Loaded, and still answering.",
  fresh: "fresh session: found again?",
  freshAnswer: "Found again after the restart.",
};

// Starts the agent (through tap.mjs) as a child of this driver.
export function spawnAgent(h) {
  const child = spawn(h.tap[0], [h.tap[1]], { stdio: ["pipe", "pipe", "inherit"], cwd: h.cwd });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  child.stdin.on("error", () => {});
  return { child, exited, stdin: Writable.toWeb(child.stdin), stdout: Readable.toWeb(child.stdout) };
}

// The client goes away: close the agent's stdin; docs/contract.md §2 wants exit 0 within a second or two.
export async function stopAgent(h, a) {
  a.child.stdin.end();
  const timer = new Promise((resolve) => setTimeout(() => resolve(null), 5000));
  const how = await Promise.race([a.exited, timer]);
  if (!how) {
    h.fail("the agent did not exit within 5 s of stdin EOF");
    a.child.kill("SIGKILL");
    await a.exited;
  } else if (how.code !== 0) h.fail(`the agent exited with ${how.code ?? how.signal} after stdin EOF (docs/contract.md §2: 0)`);
}

// Raw requests on a connection whose SDK lacks a method (sdk 0.5.1 has no session/resume): the
// SDK's stream is wrapped, our requests use string ids "raw-N", and their answers are taken out
// before the SDK sees them; every other message passes through to the SDK untouched.
export function rawChannel(stream) {
  const waiting = new Map();
  let n = 0;
  const writer = stream.writable.getWriter();
  const reader = stream.readable.getReader();
  const readable = new ReadableStream({
    async pull(controller) {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) { controller.close(); return; }
        if (value && typeof value.id === "string" && waiting.has(value.id) && !("method" in value)) {
          const w = waiting.get(value.id);
          waiting.delete(value.id);
          if ("error" in value) w.reject(Object.assign(new Error(value.error.message), value.error));
          else w.resolve(value.result);
          continue;
        }
        controller.enqueue(value);
        return;
      }
    },
  });
  const writable = new WritableStream({ write: (m) => writer.write(m), close: () => writer.close() });
  return {
    stream: { readable, writable },
    request(method, params) {
      const id = `raw-${++n}`;
      const p = new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
      writer.write({ jsonrpc: "2.0", id, method, params });
      return p;
    },
  };
}

// The installed version of a package in build/clients/node_modules (the drivers run from build/clients/run).
export const pkgVersion = (name) => JSON.parse(readFileSync(join(here, "..", "node_modules", name, "package.json"), "utf8")).version;
