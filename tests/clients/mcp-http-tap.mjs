// Stands between the agent and one Streamable HTTP MCP server, as mcp-tap.mjs does for stdio: a
// reverse proxy on 127.0.0.1 (a port from the kernel) in the driver's own process, forwarding every
// request to 127.0.0.1:<target> and recording each exchange in arrival order. Bytes pass through
// unchanged and at once (an SSE reply or the GET stream streams); a client that goes away ends its
// upstream request. Nothing is written anywhere: the records hold the ACP headers' values.
//   const tap = await httpTap(targetPort); ... tap.exchanges; await tap.close();
// An exchange: {method, url, headers (lower-case names), body, status, resHeaders, resBody(), done,
// error}; body and resBody() are UTF-8 text; done is set when the response ended in full.
import http from "node:http";

export function httpTap(targetPort) {
  const exchanges = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    const x = { method: req.method, url: req.url, headers: req.headers, body: "", status: null, resHeaders: null,
      resBody: () => Buffer.concat(chunks).toString("utf8"), done: false, error: null };
    exchanges.push(x);
    const sent = [];
    const up = http.request({ host: "127.0.0.1", port: targetPort, method: req.method, path: req.url, headers: req.headers });
    up.on("response", (r) => {
      x.status = r.statusCode;
      x.resHeaders = r.headers;
      res.writeHead(r.statusCode, r.rawHeaders);
      res.flushHeaders();
      r.on("data", (c) => { chunks.push(c); res.write(c); });
      r.on("end", () => { x.done = true; res.end(); });
      r.on("error", () => res.destroy());
    });
    up.on("error", (e) => {
      x.error ??= e.message;
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.on("data", (c) => { sent.push(c); up.write(c); });
    req.on("end", () => { x.body = Buffer.concat(sent).toString("utf8"); up.end(); });
    res.on("close", () => { if (!x.done) up.destroy(); });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({
      port: server.address().port,
      exchanges,
      close: () => new Promise((done) => { server.closeAllConnections(); server.close(() => done()); }),
    }));
  });
}

// The JSON-RPC messages of a reply body: a JSON object or array, or the data of each SSE event.
// Text that is neither is returned as {unparsed: text}.
export function replyMessages(contentType, text) {
  const out = [];
  const take = (s) => {
    try {
      const v = JSON.parse(s);
      out.push(...(Array.isArray(v) ? v : [v]));
    } catch { out.push({ unparsed: s.slice(0, 200) }); }
  };
  if (/^text\/event-stream/i.test(contentType ?? "")) {
    for (const ev of text.split(/\r?\n\r?\n/)) {
      const data = ev.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
      if (data.length && data.join("").length) take(data.join("\n"));
    }
  } else if (text.trim().length) take(text);
  return out;
}
