#!/usr/bin/env python3
# Writes the scenarios that run the openai provider against tests/mock_openai.c.
# Run it, then UPDATE_SNAPSHOTS=1 make scenarios, then review the expected/ diff like code.
import json, os
B = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios")
INIT = [{"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
        {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}}]
def P(text, n=1): return {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:%d}}" % n, "prompt": [{"type": "text", "text": text}]}}}
W = {"waitIdle": True}; EOF_ = {"eof": True}

def sc(name, steps, responses, env=None, args=None, recording=None):
    d = os.path.join(B, name); os.makedirs(d, exist_ok=True)
    # The network decides where a stream is cut: compare merged chunks (parity needs exact ones).
    o = {"args": ["--tools", "none"] + (args or []), "mock": "mock.json", "steps": steps}
    if not name.startswith("parity"): o["mergeChunks"] = True
    if env: o["env"] = env
    json.dump(o, open(d + "/scenario.json", "w"), indent=1)
    json.dump({"responses": responses}, open(d + "/mock.json", "w"), indent=1)
    json.dump(recording or {"version": 1, "scripts": []}, open(d + "/recording.json", "w"), indent=1)

def chunk(delta=None, finish=None, usage=None):
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if usage: c["usage"] = usage
    return c
def text_events(text, n=5):
    return [chunk({"content": text[i:i+n]}) for i in range(0, len(text), n)] + [chunk(finish="stop")]

sc("openai-text", INIT + [P("Say hello."), EOF_], [
    {"events": [chunk({"role": "assistant", "content": ""})] + text_events("Héllo — streamed through an SSE parser, split at every third byte.") +
     [{"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}],
     "split": 3}])

sc("openai-reasoning", INIT + [P("Think first.")], [
    {"events": [chunk({"reasoning_content": "Let me think"}), chunk({"reasoning_content": " it through."}),
                chunk({"content": "Thought, then answered."}), chunk(finish="stop")], "split": 7}])
json.dump({"args": ["--tools", "none"], "mock": "mock.json", "mergeChunks": True, "steps": INIT + [P("Think first."), EOF_]}, open(os.path.join(B, "openai-reasoning", "scenario.json"), "w"), indent=1)

def tc(index, id=None, name=None, args=None):
    d = {"index": index, "function": {}}
    if id: d["id"] = id; d["type"] = "function"
    if name: d["function"]["name"] = name
    if args is not None: d["function"]["arguments"] = args
    return d
sc("openai-tool-calls", INIT + [P("List the agents and read a file."), W, EOF_], [
    {"events": [chunk({"content": "Two calls."}),
                chunk({"tool_calls": [tc(0, "call_abc", "list_agents", "")]}),
                chunk({"tool_calls": [tc(1, "call_def", "read_file", "{\"pa")]}),
                chunk({"tool_calls": [tc(0, args="{\"scope\":")]}),
                chunk({"tool_calls": [tc(1, args="th\":\"README\"}")]}),
                chunk({"tool_calls": [tc(0, args="\"children\"}")]}),
                chunk(finish="tool_calls")], "split": 11},
    {"events": text_events("No subagents yet, and there is no read_file tool.")}])

sc("openai-errors", INIT + [P("401"), P("400"), P("503 three times"), P("429 then fine"), P("malformed"),
                            P("no done"), P("reset"), P("idle"), P("still serving"), EOF_], [
    {"status": 401, "body": "{\"error\":{\"message\":\"Authentication Fails (no such user)\"}}"},
    {"status": 400, "body": "{\"error\":{\"message\":\"Invalid value for model: no-such-model does not exist\"}}"},
    {"status": 503, "body": "{\"error\":{\"message\":\"busy\"}}"},
    {"status": 503, "body": "{\"error\":{\"message\":\"busy\"}}"},
    {"status": 503, "body": "{\"error\":{\"message\":\"still busy\"}}"},
    {"status": 429, "headers": {"Retry-After": "0.01"}, "body": "{\"error\":{\"message\":\"slow down\"}}"},
    {"events": text_events("Answered after a 429.")},
    {"raw": "data: {\"choices\":[{\"delta\":{\"content\":\"partial \"}}]}\n\ndata: {not json\n\n"},
    {"events": [chunk({"content": "cut off"})], "done": False},
    {"events": text_events("this connection resets midway", 4), "reset_after": 120},
    {"hang": True},
    {"events": text_events("Still serving after every failure.")}],
   env={"ACP_AGENT_IDLE_TIMEOUT_MS": "2500"})

sc("openai-cancel", INIT + [
    {"sendRaw": "{\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"{{session:1}}\",\"prompt\":[{\"type\":\"text\",\"text\":\"Stream slowly.\"}]}}"},
    {"waitFor": "agent_message_chunk"},
    {"notify": {"method": "session/cancel", "params": {"sessionId": "{{session:1}}"}}},
    {"waitFor": "\"cancelled\""},
    P("After the cancel."), EOF_], [
    {"events": text_events("word " * 200, 5), "split": 60, "delay_ms": 150},
    {"events": text_events("Fresh answer.")}])

# docs/contract.md §19: a request rejected for its length compacts once and is retried; usage reaches the client.
USAGE = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}}
sc("openai-overflow", INIT + [P("First question."), P("Second question, after a long first answer."), EOF_], [
    {"events": text_events("A long first answer.") + [USAGE]},
    {"status": 400, "body": "{\"error\":{\"message\":\"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens\",\"code\":\"context_length_exceeded\"}}"},
    {"events": text_events("The person asked a first question and got a long answer.")},
    {"events": text_events("The second answer, after the compaction.") + [USAGE]}])

sc("openai-slow-drip", INIT + [P("Drip."), EOF_], [
    {"events": text_events("one byte at a time", 3), "split": 1, "delay_ms": 1}])

# Parity: the same conversation through replay and through openai gives the same transcript.
PARITY_TEXT = "Parity: same transcript either way."
conv = INIT + [P("Use a tool, then answer."), W, EOF_]
os.makedirs(os.path.join(B, "parity-replay"), exist_ok=True)
json.dump({"args": ["--tools", "none"], "steps": conv}, open(os.path.join(B, "parity-replay", "scenario.json"), "w"), indent=1)
json.dump({"version": 1, "scripts": [{"agent": "root", "replies": [
    {"tool_calls": [{"name": "list_agents", "arguments": {}}]},
    {"text": PARITY_TEXT}]}]}, open(os.path.join(B, "parity-replay", "recording.json"), "w"), indent=1)
sc("parity-openai", conv, [
    {"events": [chunk({"tool_calls": [tc(0, "call_1_1_1", "list_agents", "{}")]}), chunk(finish="tool_calls")]},
    # One event per network write (20 ms apart), so each 16-byte delta is its own update, as in replay.
    {"events": text_events(PARITY_TEXT, 16), "per_event": True, "delay_ms": 20}])
