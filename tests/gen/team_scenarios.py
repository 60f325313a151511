#!/usr/bin/env python3
# Writes the Team profile scenarios. Run it, then UPDATE_SNAPSHOTS=1 make scenarios, then review.
import json, os
B = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios")
INI = {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}}
INIT = [INI, {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}}]
LOAD = {"send": {"method": "session/load", "params": {"sessionId": "{{session:1}}", "cwd": "{{cwd}}", "mcpServers": []}}}
def P(text, n=1): return {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:%d}}" % n, "prompt": [{"type": "text", "text": text}]}}}
W = {"waitIdle": True}; EOF_ = {"eof": True}
def call(tool, **a): return {"name": tool, "arguments": a}
def sc(name, steps, scripts, args=None, env=None):
    d = os.path.join(B, name); os.makedirs(d, exist_ok=True)
    o = {"args": ["--tools", "none", "--profile", "team"] + (args or []), "steps": steps}
    if env: o["env"] = env
    json.dump(o, open(d + "/scenario.json", "w"), indent=1)
    json.dump({"version": 1, "scripts": scripts}, open(d + "/recording.json", "w"), indent=1)
NOTED = [{"text": "Noted."}] * 6

sc("team-workflow", INIT + [P("Write and test the guide with two teammates."), W, EOF_], [
 {"agent": "root", "replies": [
   {"tool_calls": [call("team_task_create", subject="write", description="Write docs/guide.md", write_scopes=["docs/"]),
                   call("team_task_create", subject="test", description="Test the guide", blocked_by=["task-1"], write_scopes=["docs/guide.md"])]},
   {"expect": "writeScopeWarnings", "tool_calls": [call("spawn_teammate", name="writer", description="writes the guide", prompt="Claim task-1, complete it, tell the lead."),
                   call("spawn_teammate", name="tester", description="tests the guide", prompt="Claim task-2 once it is ready, complete it, tell the lead.")]},
   {"tool_calls": [call("wait_agent", timeout_ms=10000)]},
   {"tool_calls": [call("team_task_list"), call("list_agents")]},
   {"text": "Both tasks are on the board; the team is working."}] + NOTED},
 {"agent": "label:writer", "replies": [
   {"tool_calls": [call("team_task_update", task_id="task-1", expected_revision=1, action="claim")]},
   {"expect": "in_progress", "tool_calls": [call("team_task_update", task_id="task-1", expected_revision=2, action="complete")]},
   {"expect": "completed", "tool_calls": [call("send_message", target="lead", message="task-1 is done")]},
   {"text": "Written."}]},
 {"agent": "label:tester", "replies": [
   {"tool_calls": [call("team_task_update", task_id="task-2", expected_revision=1, action="claim")]},
   {"tool_calls": [call("wait_agent", timeout_ms=10000)]},
   {"tool_calls": [call("team_task_update", task_id="task-2", expected_revision=1, action="claim")]},
   {"expect": "in_progress", "tool_calls": [call("team_task_update", task_id="task-2", expected_revision=2, action="complete")]},
   {"tool_calls": [call("send_message", target="lead", message="task-2 is done")]},
   {"text": "Tested."}]}])

big = "x" * 65537
sc("team-errors", INIT + [P("Hit every team error once."), W, EOF_], [
 {"agent": "root", "replies": [
   {"tool_calls": [
     call("wait_agent", timeout_ms=10000),
     call("spawn_teammate", name="Bad_Name", description="d", prompt="p"),
     call("spawn_teammate", name="lead", description="d", prompt="p"),
     call("spawn_teammate", name="alpha", description="first", prompt="Try what a teammate may not do."),
     call("spawn_teammate", name="alpha", description="again", prompt="p"),
     call("send_message", target="lead", message="to myself"),
     call("send_message", target="ghost", message="anyone?"),
     call("send_message", target="alpha", message=big),
     call("wait_agent", timeout_ms=5),
     call("interrupt_agent", target="ghost"),
     call("team_task_get", task_id="task-9"),
     call("team_task_create", subject="one", description="first"),
     call("team_task_update", task_id="task-1", expected_revision=5, action="claim"),
     call("team_task_create", subject="two", description="second", blocked_by=["task-1"]),
     call("team_task_create", subject="three", description="bad dep", blocked_by=["task-7"]),
     call("team_task_update", task_id="task-2", expected_revision=1, action="claim"),
     call("team_task_update", task_id="task-1", expected_revision=1, action="claim"),
     call("team_task_update", task_id="task-1", expected_revision=2, action="delete"),
     call("team_task_update", task_id="task-1", expected_revision=2, action="set_dependencies", blocked_by=["task-2"]),
     call("team_task_list", limit=0),
     call("team_task_update", task_id="task-1", expected_revision=2, action="reassign", owner="nobody")]},
   {"tool_calls": [call("spawn_teammate", name="m%d" % i, description="filler", prompt="Say hi.") for i in range(2, 10)]},
   {"tool_calls": [call("team_task_create", subject="filler %d" % i, description="fills the board") for i in range(3, 258)]},
   {"text": "Every error seen."}] + NOTED},
 {"agent": "label:alpha", "replies": [
   {"tool_calls": [call("spawn_teammate", name="beta", description="d", prompt="p"),
                   call("interrupt_agent", target="lead"),
                   call("team_task_update", task_id="task-1", expected_revision=2, action="claim"),
                   call("team_task_update", task_id="task-1", expected_revision=2, action="complete")]},
   {"text": "Refused, as expected."}]}] +
 [{"agent": "label:m%d" % i, "replies": [{"text": "hi"}]} for i in range(2, 10)], args=["--max-active", "8"])

sc("team-restart", INIT + [P("Start a keeper."), W, {"send": P("Mail the keeper.")["send"], "await": False}, {"eof": True, "expectExit": 3},
    {"restart": True, "env": {"ACP_AGENT_FAULTS": ""}}, INI, LOAD, W, {"restart": True}, INI, LOAD, W, EOF_], [
 {"agent": "root", "replies": [
   {"tool_calls": [call("spawn_teammate", name="keeper", description="keeps mail", prompt="Say ready.")]},
   {"text": "Spawned."},
   {"expect": "finished", "text": "The keeper is idle."},
   {"tool_calls": [call("send_message", target="keeper", message="the mail")]},
   {"expect": "finished", "text": "The mail reached the keeper once, after the restart."}] + NOTED},
 {"agent": "label:keeper", "replies": [
   {"text": "Ready."},
   {"expect": "the mail", "text": "Got the mail."}]}],
 env={"ACP_AGENT_FAULTS": "exit-after-event:team/message/queued:1"})

sc("team-interrupt", INIT + [P("Interrupt a running and an idle teammate."), W, EOF_], [
 {"agent": "root", "replies": [
   {"tool_calls": [call("spawn_teammate", name="busy", description="hangs", prompt="Work forever."),
                   call("spawn_teammate", name="quick", description="answers", prompt="Say done.")]},
   {"tool_calls": [call("list_agents")]},
   {"tool_calls": [call("interrupt_agent", target="busy"), call("interrupt_agent", target="quick")]},
   {"text": "Interrupted."}] + NOTED},
 {"agent": "label:busy", "replies": [{"hang": True}]},
 {"agent": "label:quick", "replies": [{"text": "done"}]}])

sc("team-mailbox-full", INIT + [P("Fill a stored teammate's mailbox while the only slot is held."), W, EOF_], [
 {"agent": "root", "replies": [
   {"tool_calls": [call("spawn_teammate", name="sleeper", description="finishes at once", prompt="Say ok.")]},
   {"text": "Spawned the sleeper."},
   {"expect": "finished", "tool_calls": [call("spawn_teammate", name="hold", description="holds the only slot", prompt="Work forever.")]},
   {"tool_calls": [call("send_message", target="sleeper", message="note %d" % i) for i in range(1, 66)]},
   {"expect": "undelivered messages", "tool_calls": [call("interrupt_agent", target="hold")]},
   {"text": "The slot frees; the queued mail goes out in order."}] + NOTED},
 {"agent": "label:sleeper", "replies": [{"text": "ok"}, {"expect": "note 1", "text": "Read all 64 notes."}] + NOTED},
 {"agent": "label:hold", "replies": [{"hang": True}]}], args=["--max-active", "1"])
