#!/usr/bin/env python3
# Writes the scenario.json / recording.json (and state/ fixtures) of the subagent scenarios.
# Run it, then UPDATE_SNAPSHOTS=1 make scenarios, then review the expected/ diff like code.
import json, os
B=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios")
INIT=[{"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
      {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}}]
def P(text, n=1): return {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:%d}}"%n, "prompt": [{"type": "text", "text": text}]}}}
def sc(name, steps, scripts, args=None, env=None, state=None):
    d=os.path.join(B,name); os.makedirs(d, exist_ok=True)
    o={"args": ["--tools", "none"] + (args or []), "steps": steps}
    if env: o["env"]=env
    json.dump(o, open(d+"/scenario.json","w"), indent=1)
    json.dump({"version":1,"scripts":scripts}, open(d+"/recording.json","w"), indent=1)
def call(name, **a): return {"name": name, "arguments": a}
W={"waitIdle": True}; EOF_={"eof": True}

sc("subagent-list-agents", INIT+[P("Count the files with a helper."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="count the files", prompt="Count the files in the repo and report the number.")]},
   {"expect":"started subagent","text":"Started; I will wait for the result."},
   {"expect":"finished and will do no further work","tool_calls":[call("list_agents")]},
   {"expect":"[inactive] \u2014 count the files","text":"The child is done."}]},
 {"agent":"label:count the files","replies":[{"expect":"Your parent agent id is","text":"There are 42 files."}]}])

sc("subagent-foreground", INIT+[P("Ask a helper and wait."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="answer now", prompt="What is 6 times 7? Answer with the number.", run_in_background=False)]},
   {"expect":"42","tool_calls":[call("list_agents")]},
   {"expect":"(no subagents)","text":"The helper said 42; one-shot helpers are not listed."}]},
 {"agent":"label:answer now","replies":[{"tool_calls":[call("list_agents")]},{"text":"42"}]}])

sc("subagent-foreground-failure", INIT+[P("Try two helpers that fail."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="will fail", prompt="Fail.", run_in_background=False)]},
   {"expect":"Error: subagent run failed: upstream returned 500","tool_calls":[call("subagent", description="runs long", prompt="Write a long essay.", run_in_background=False)]},
   {"expect":"Error: subagent run hit its token limit before finishing\nPartial output before the run ended:\nThe essay begins","text":"Both helpers failed, as expected."}]},
 {"agent":"label:will fail","replies":[{"error":{"message":"upstream returned 500","code":"HTTP_500"}}]},
 {"agent":"label:runs long","replies":[{"text":"The essay begins and never ends","finish":"length"}]}])

TALLY="{{agent:tally}}"
sc("subagent-continuable", INIT+[P("Keep a tally with a helper."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="tally", prompt="Start a tally at 1 and report it.")]},
   {"text":"Started the tally."},
   {"expect":"Its closing message:\nTally is 1.","tool_calls":[call("send_message", agent_id=TALLY, message="Add 1.")]},
   {"expect":"message delivered to agent","text":"Asked for one more."},
   {"expect":"Its closing message:\nTally is 2.","tool_calls":[call("send_message", agent_id=TALLY, message="Add 1 more.")]},
   {"expect":"message delivered to agent","text":"Asked again."},
   {"expect":"Tally is 3.","tool_calls":[call("send_message", agent_id="00000000-0000-4000-8000-00000000dead", message="Anyone?")]},
   {"expect":"Error: subagent \"00000000-0000-4000-8000-00000000dead\" is unavailable","text":"The tally is 3."}]},
 {"agent":"label:tally","replies":[
   {"text":"Tally is 1."},
   {"expect":"sent a message: Add 1.","text":"Tally is 2."},
   {"expect":"sent a message: Add 1 more.","text":"Tally is 3."}]}])

sc("subagent-steer", INIT+[P("Start a helper and steer it."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="steerable", prompt="Look around, then answer.")]},
   {"tool_calls":[call("send_message", agent_id="{{agent:steerable}}", message="Focus on the tests.")]},
   {"expect":"message delivered","text":"Steered."},
   {"expect":"finished","text":"It is done."}]},
 {"agent":"label:steerable","replies":[
   {"tool_calls":[call("list_agents")]},
   {"expect":"sent a message: Focus on the tests.","text":"Focused on the tests, as asked mid-turn."}]}])

sc("subagent-child-to-parent", INIT+[P("Start a helper that reports back."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="reporter", prompt="Report progress to your parent, then finish.")]},
   {"text":"Waiting for reports."},
   {"expect":"sent a message: halfway there","text":"Noted the progress report."},
   {"expect":"finished","text":"The reporter finished."}]},
 {"agent":"label:reporter","replies":[
   {"tool_calls":[call("send_message", agent_id="{{parent}}", message="halfway there")]},
   {"expect":"message delivered to agent","text":"All done."}]}])

sc("subagent-descendants", INIT+[P("Build a three-level tree."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="level one", prompt="Delegate to a helper in the foreground.")]},
   {"text":"Level one started."},
   {"expect":"finished","tool_calls":[call("list_agents", scope="descendants"), call("list_agents")]},
   {"text":"Listed the tree."}]},
 {"agent":"label:level one","replies":[
   {"tool_calls":[call("subagent", description="level two", prompt="Start a background helper.", run_in_background=False)]},
   {"text":"Level one done."}]},
 {"agent":"label:level two","replies":[
   {"tool_calls":[call("subagent", description="level three", prompt="Say hello.")]},
   {"text":"Level two done."}]},
 {"agent":"label:level three","replies":[{"text":"Hello from level three."}]}])

HANG="{{agent:hangs}}"
sc("subagent-interrupt", INIT+[P("Start a helper that hangs, then stop it."), W,
   {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
   P("A stranger tries to interrupt.", 2), W,
   P("Wake the helper.", 1), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="hangs", prompt="Wait forever.")]},
   {"tool_calls":[call("send_message", agent_id=HANG, message="parked note"), call("interrupt_agent", agent_id=HANG)]},
   {"expect":"interrupt requested for agent","tool_calls":[call("interrupt_agent", agent_id="{{self}}")]},
   {"expect":"cannot interrupt itself","tool_calls":[call("interrupt_agent", agent_id="00000000-0000-4000-8000-00000000beef")]},
   {"expect":"interrupt requested for agent 00000000-0000-4000-8000-00000000beef","text":"Stopped it; the note is parked."},
   {"expect":"Wake the helper.","tool_calls":[call("send_message", agent_id=HANG, message="wake up")]},
   {"expect":"message delivered","text":"Woken."},
   {"expect":"finished","text":"It handled both."}]},
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="other", prompt="Say ok.")]},
   {"tool_calls":[call("interrupt_agent", agent_id="00000000-0000-4000-8000-000000000004")]},
   {"expect":"finished","text":"Refused (see the tool result); meanwhile the other helper finished."}]},
 {"agent":"label:hangs","replies":[
   {"hang": True},
   {"expect":"parked note","text":"Got the parked note."},
   {"expect":"wake up","text":"And the wake-up call."}]},
 {"agent":"label:other","replies":[{"text":"ok"}]}])

LOAD={"send": {"method": "session/load", "params": {"sessionId": "{{session:1}}", "cwd": "{{cwd}}", "mcpServers": []}}}
INI={"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}}
sc("subagent-cold-resume", INIT+[P("Start a helper."), W, {"restart": True}, INI, LOAD,
    P("Continue the helper after the restart."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="remember", prompt="Remember the number 7.")]},
   {"text":"Started."},
   {"expect":"finished","text":"It remembered."},
   {"expect":"after the restart","tool_calls":[call("list_agents")]},
   {"expect":"[inactive] \u2014 remember","tool_calls":[call("send_message", agent_id="{{agent:remember}}", message="Which number?")]},
   {"expect":"message delivered","text":"Asked it again, from disk."},
   {"expect":"Its closing message:\nThe number was 7.","text":"It still knew: 7."}]},
 {"agent":"label:remember","replies":[
   {"text":"Remembered 7."},
   {"expect":"Which number?","text":"The number was 7."}]}])

sc("subagent-authority", INIT+[P("Start a private helper."), W,
    {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
    P("Try to reach the other session's helper.", 2), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="private", prompt="Say done.")]},
   {"text":"Started."},
   {"expect":"finished","text":"Done."}]},
 {"agent":"root","replies":[
   {"tool_calls":[call("send_message", agent_id="00000000-0000-4000-8000-000000000004", message="Hello from a stranger.")]},
   {"expect":"belongs to another parent session","tool_calls":[call("send_message", agent_id="not-an-id", message="x")]},
   {"expect":"is not a valid agent id","tool_calls":[call("send_message", agent_id="00000000-0000-4000-8000-000000000001", message="to the other root")]},
   {"expect":"belongs to another parent session","text":"Refused everywhere, as it should be."}]},
 {"agent":"label:private","replies":[{"text":"done"}]}])

sc("subagent-depth-limit", INIT+[P("Delegate twice."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="first level", prompt="Delegate further.", run_in_background=False)]},
   {"expect":"subagent depth 2 exceeds maxDepth 1","text":"The depth limit held."}]},
 {"agent":"label:first level","replies":[
   {"tool_calls":[call("subagent", description="second level", prompt="Too deep.")]},
   {"expect":"Error: subagent depth 2 exceeds maxDepth 1","text":"Could not go deeper: subagent depth 2 exceeds maxDepth 1."}]}], args=["--max-depth","1"])

sc("subagent-capacity", INIT+[P("Start two helpers at once."), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="slot holder", prompt="Wait a moment."), call("subagent", description="one too many", prompt="Never starts.")]},
   {"expect":"holding slots: ","text":"Only one slot."},
   {"expect":"finished","tool_calls":[call("subagent", description="after the slot freed", prompt="Now there is room.")]},
   {"expect":"started subagent","text":"Started after the slot freed."},
   {"expect":"finished","text":"All done."}]},
 {"agent":"label:slot holder","replies":[{"text":"held"}]},
 {"agent":"label:after the slot freed","replies":[{"text":"ran"}]}], args=["--max-active","1"])

def raw(text, n=1): return P(text, n)
sc("subagent-slash-commands", INIT+[P("Start a helper for the commands."), W,
    P("/agents"), P("/send 00000000-0000-4000-8000-000000000004 Please add a footnote."), W,
    P("/send"), P("/interrupt 00000000-0000-4000-8000-000000000004"), P("/interrupt {{session:1}}"), P("/agents"), W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="writer", prompt="Write a line.")]},
   {"text":"Started the writer."},
   {"expect":"finished","text":"The writer finished."},
   {"expect":"finished","text":"The writer finished again."}]},
 {"agent":"label:writer","replies":[
   {"text":"A line."},
   {"expect":"Please add a footnote.","text":"A line with a footnote."}]}])

PN=P("Start a helper; the process dies after it settles."); PN["await"]=False
sc("subagent-settlement-recovery", INIT+[PN,
    {"waitFor": "started subagent"}, {"eof": True, "expectExit": 3},
    {"restart": True, "env": {"ACP_AGENT_FAULTS": ""}}, INI, LOAD, W,
    {"restart": True}, INI, LOAD, W, EOF_], [
 {"agent":"root","replies":[
   {"tool_calls":[call("subagent", description="settles", prompt="Finish quickly.")]},
   {"text":"Started."},
   {"expect":"finished","text":"The notice arrived after the restart, exactly once."}]},
 {"agent":"label:settles","replies":[{"text":"Finished."}]}], env={"ACP_AGENT_FAULTS":"exit-after-settled"})

def fixture(name, files):
    d=os.path.join(B,name,"state","sessions"); os.makedirs(d, exist_ok=True)
    for fid, lines in files.items():
        with open(os.path.join(d, fid+".jsonl"),"w") as f:
            for l in lines: f.write((l if isinstance(l,str) else json.dumps(l,separators=(',',':')))+"\n")
R="00000000-0000-4000-8000-0000000000a0"
def hdr(i, t, parent=R, origin="subagent", version=1, depth=1):
    h={"type":"session","version":version,"id":i,"createdAt":t,"cwd":"/work/project","delegationDepth":depth}
    if parent: h["parentSession"]=parent
    if origin: h["origin"]=origin
    return h
def ev(seq, t, typ, data): return {"seq":seq,"time":t,"type":typ,"data":data}
def desc(mode, label=None, version=2):
    d={"version":version,"mode":mode,"provider":"in-process"}
    if label is not None: d["label"]=label
    return d
T=1789000001000
def turn(seq0, t0, text):
    return [ev(seq0,t0,"turn/start",{"turn":1}),
            ev(seq0+1,t0+1,"user/message",{"id":"00000000-0000-4000-8000-0000000001%02x"%seq0,"content":[{"type":"text","text":"task"}],"source":{"kind":"agent-message","senderSessionId":R}}),
            ev(seq0+2,t0+2,"step/start",{"turn":1,"step":1}),
            ev(seq0+3,t0+3,"assistant/message",{"turn":1,"step":1,"id":"00000000-0000-4000-8000-0000000002%02x"%seq0,"content":[{"type":"text","text":text}],"finish":"stop"}),
            ev(seq0+4,t0+4,"step/end",{"turn":1,"step":1}),
            ev(seq0+5,t0+5,"turn/end",{"turn":1,"reason":{"kind":"completed"}})]
files={}
files[R]=[hdr(R,T,parent=None,origin=None,depth=0)]+[ev(0,T+1,"turn/start",{"turn":1}),
    ev(1,T+2,"user/message",{"id":"00000000-0000-4000-8000-0000000003a0","content":[{"type":"text","text":"Earlier work."}],"source":{"kind":"user"}}),
    ev(2,T+3,"step/start",{"turn":1,"step":1}),
    ev(3,T+4,"assistant/message",{"turn":1,"step":1,"id":"00000000-0000-4000-8000-0000000003a1","content":[{"type":"text","text":"Done earlier."}],"finish":"stop"}),
    ev(4,T+5,"step/end",{"turn":1,"step":1}), ev(5,T+6,"turn/end",{"turn":1,"reason":{"kind":"completed"}})]
A=lambda n:"00000000-0000-4000-8000-0000000000a%d"%n
files[A(1)]=[hdr(A(1),T+10)]+turn(0,T+11,"no descriptor")+[ev(6,T+17,"subagent/settled",{"epoch":1,"end":"completed"})]
files[A(2)]=[hdr(A(2),T+20),ev(0,T+21,"subagent/descriptor",desc("weird","bad mode"))]+turn(1,T+22,"malformed")
files[A(3)]=[hdr(A(3),T+30),ev(0,T+31,"subagent/descriptor",desc("one-shot","first")),ev(1,T+32,"subagent/descriptor",desc("continuable","second wins"))]+turn(2,T+33,"two descriptors")
files[A(4)]=[hdr(A(4),T+40,version=2),ev(0,T+41,"future/event",{"x":1})]
files[A(5)]=[hdr(A(5),T+50,origin=None)]+turn(0,T+51,"ordinary child")
files[A(6)]=[hdr(A(6),T+30),ev(0,T+31,"subagent/descriptor",desc("continuable","sibling ok"))]+turn(1,T+32,"fine")
files[A(7)]=[hdr(A(7),T+70),ev(0,T+71,"subagent/descriptor",desc("continuable","from the future",version=3))]+turn(1,T+72,"v3")
fixture("subagent-diagnostics", files)
LOADR={"send": {"method": "session/load", "params": {"sessionId": R, "cwd": "/work/project", "mcpServers": []}}}
def PR(text): return {"send": {"method": "session/prompt", "params": {"sessionId": R, "prompt": [{"type": "text", "text": text}]}}}
sc("subagent-diagnostics", [INI, LOADR, PR("List my subagents."), PR("/agents"), W, EOF_], [
 {"agent":"root","replies":[
   {"text":"(the earlier turn)"},
   {"expect":"List my subagents.","tool_calls":[call("list_agents"), call("list_agents", scope="descendants")]},
   {"expect":"[diagnostic: corrupt] parent=","text":"One bad child never hides its siblings."}]}])
