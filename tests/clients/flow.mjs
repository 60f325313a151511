// The conversation each library-level driver holds, through an adapter over its client library:
//   process 1: initialize, session/new, a prompt (the model calls list_agents, then answers),
//              the /agents slash command, a second session/new left without a prompt; the client
//              exits (stdin EOF, or whatever the library does on close)
//   process 2: initialize, session/resume of the first session (session/load where the library
//              has no resume), a prompt; the same for the second session; exit
//   process 3: initialize, session/load of the first session (its replay is checked), a prompt; exit
// An adapter's open() starts an agent process and initializes it, and returns
//   { newSession(cwd), resume?(sid, cwd), load(sid, cwd), prompt(sid, text) -> {stopReason},
//     close(), delivered: [{sessionId, update}] (each session/update its library handed over) }.
// `replayWithNextPrompt`: the library hands load's replay over only with the next prompt's updates.
import { SCRIPT, checkDelivered, checkReplay, checkSessionTraces, joinText } from "./lib.mjs";

const since = (conn, mark, sid) => conn.delivered.slice(mark).filter((d) => d.sessionId === sid).map((d) => d.update);
const mine = (conn, sid) => conn.delivered.filter((d) => d.sessionId === sid).map((d) => d.update);
const sentDuring = (h, proc, sid, method) =>
  h.traces()[proc]?.updates.filter((u) => u.sessionId === sid && u.during?.method === method).map((u) => u.update) ?? [];

// The SDKs dispatch notifications through promise chains that the prompt's answer can overtake
// by a few microtasks; every update precedes its answer on the wire, so one timer tick is enough.
const drained = () => new Promise((resolve) => setTimeout(resolve, 10));

async function turn(h, conn, sid, text, answer, { exact = true } = {}) {
  const mark = conn.delivered.length;
  const res = await h.attempt(`session/prompt ${JSON.stringify(text)}`, () => conn.prompt(sid, text));
  await drained();
  const updates = since(conn, mark, sid);
  if (res) h.eq(res.stopReason, "end_turn", `stop reason of ${JSON.stringify(text)}`);
  const got = joinText(updates);
  h.check(exact ? got === answer : got.endsWith(answer),
    `the agent_message_chunk text the client got for ${JSON.stringify(text)} is ${JSON.stringify(got.slice(-120))}, expected ${exact ? "" : "it to end with "}${JSON.stringify(answer)}`);
  return updates;
}

// Opens `sid` again in a new process: load (with its replay checked against `history`) or resume.
async function reopen(h, adapter, conn, how, sid, history, proc) {
  const mark = conn.delivered.length;
  const ok = await h.attempt(`session/${how} of ${sid} after the restart`, () => conn[how](sid, h.cwd));
  await drained();
  if (ok === undefined) return false;
  if (how !== "load") return true;
  conn.replayCheck = () => {
    checkReplay(h, since(conn, mark, sid), history);
    const calls = sentDuring(h, proc, sid, "session/load").filter((u) => u.sessionUpdate === "tool_call" && u.status === "completed");
    h.eq(calls.length, history.length / 2, "completed tool_calls in the session/load replay (one per earlier list_agents call, docs/contract.md §3.5)");
  };
  if (!adapter.replayWithNextPrompt) conn.replayCheck();
  return true;
}

export async function runFlow(h, adapter) {
  h.step("process 1: initialize");
  let conn = await h.attempt("initialize", () => adapter.open());
  if (!conn) return h.finish("could not start");
  const cont = typeof conn.resume === "function" ? "resume" : "load";
  h.step("process 1: session/new");
  const sid = await h.attempt("session/new", () => conn.newSession(h.cwd));
  if (!sid) { await conn.close(); return h.finish("no session"); }

  h.step(`process 1: prompt ${JSON.stringify(SCRIPT.hello)}`);
  await turn(h, conn, sid, SCRIPT.hello, SCRIPT.helloAnswer, { exact: false });
  // What the agent sent (its delivery is checkDelivered's business).
  const sent = sentDuring(h, 0, sid, "session/prompt");
  const call = sent.find((u) => u.sessionUpdate === "tool_call");
  h.check(call && call.kind === "search" && call.title === "List agents", `the agent's list_agents tool_call is not {kind: "search", title: "List agents"} (docs/contract.md §3.4): ${JSON.stringify(call ?? null)}`);
  h.check(sent.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed" && u.toolCallId === call?.toolCallId),
    "the agent sent no completed tool_call_update for its list_agents call (docs/contract.md §3.4)");
  h.check(mine(conn, sid).some((u) => u.sessionUpdate === "available_commands_update" && u.availableCommands?.some((c) => c.name === "agents")),
    "the client never got an available_commands_update naming agents after session/new (docs/contract.md §3.6)");
  h.step(`process 1: prompt ${SCRIPT.agents}`);
  await turn(h, conn, sid, SCRIPT.agents, SCRIPT.agentsAnswer, { exact: false });
  // A second session that sees no prompt before the client exits (acpx's "sessions new" does
  // this): docs/contract.md §20 makes it durable from its session/new response on.
  h.step("process 1: a second session/new");
  const fresh = await h.attempt("the second session/new", () => conn.newSession(h.cwd));
  h.step("process 1: exit");
  await conn.close();
  await h.settle("the client closed");
  checkDelivered(h, h.traces()[0], mine(conn, sid), sid);

  h.step("process 2: initialize");
  conn = await h.attempt("initialize after the restart", () => adapter.open());
  if (!conn) return h.finish("could not restart");
  h.step(`process 2: session/${cont}`);
  const hello = [{ kind: "user", text: SCRIPT.hello }, { kind: "agent", text: SCRIPT.helloAnswer }];
  const reopened = await reopen(h, adapter, conn, cont, sid, hello, 1);
  if (reopened) {
    h.step(`process 2: prompt ${JSON.stringify(SCRIPT.afterResume)}`);
    await turn(h, conn, sid, SCRIPT.afterResume, SCRIPT.afterResumeAnswer, { exact: cont === "resume" || !adapter.replayWithNextPrompt });
    conn.replayCheck?.();
  }
  if (fresh) {
    h.step(`process 2: session/${cont} of the session that saw no prompt`);
    const again = await h.attempt(`session/${cont} of ${fresh}, created and left without a prompt before the restart (docs/contract.md §20: durable from session/new on)`,
      () => conn[cont](fresh, h.cwd));
    if (again !== undefined) {
      h.step(`process 2: prompt ${JSON.stringify(SCRIPT.fresh)}`);
      await turn(h, conn, fresh, SCRIPT.fresh, SCRIPT.freshAnswer);
    }
  }
  h.step("process 2: exit");
  await conn.close();
  await h.settle("the client closed");
  checkDelivered(h, h.traces()[1], mine(conn, sid), sid);

  h.step("process 3: initialize");
  conn = await h.attempt("initialize after the second restart", () => adapter.open());
  if (!conn) return h.finish("could not restart");
  h.step("process 3: session/load");
  const history = reopened ? [...hello, { kind: "user", text: SCRIPT.afterResume }, { kind: "agent", text: SCRIPT.afterResumeAnswer }] : hello;
  if (await reopen(h, adapter, conn, "load", sid, history, 2)) {
    h.step(`process 3: prompt ${JSON.stringify(SCRIPT.afterLoad)}`);
    await turn(h, conn, sid, SCRIPT.afterLoad, SCRIPT.afterLoadAnswer, { exact: !adapter.replayWithNextPrompt });
    conn.replayCheck?.();
  }
  h.step("process 3: exit");
  await conn.close();
  await h.settle("the client closed");
  const procs = h.traces();
  checkDelivered(h, procs[2], mine(conn, sid), sid);
  h.step("traces");
  checkSessionTraces(h, procs, sid);
  h.eq(procs.length, 3, "agent processes started");
  for (const p of procs) h.check(p.exit?.startsWith("code 0"), `agent process ${p.index} ended with ${p.exit ?? "no exit recorded"} (docs/contract.md §2: EOF, SIGINT and SIGTERM end it with 0)`);
  return sid;
}
