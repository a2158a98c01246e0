// Scenario run with the v2 MCP TypeScript client (@modelcontextprotocol/client,
// protocol 2026-07-28: server/discover, no session) against a running
// Tollgate's /mcp. Env: TOLLGATE_MCP_URL, TOLLGATE_KEY, TOOL and ARGS (JSON)
// for a granted call, DENIED (a tool the key may not call).
// Prints one JSON object with what it observed; the Go test asserts on it.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const headersSeen = [];
const recording = async (input, init) => {
  const h = new Headers(init?.headers ?? {});
  if ((init?.method ?? "GET") === "POST") {
    headersSeen.push({ method: h.get("mcp-method"), name: h.get("mcp-name"), version: h.get("mcp-protocol-version") });
  }
  return fetch(input, init);
};

const errorInfo = (e) => ({ code: e?.code ?? null, message: String(e?.message ?? e) });
const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("");

// Pinned to 2026-07-28: the client's default is the legacy handshake, and a pin
// has no fallback, so a gateway that did not speak 2026-07-28 fails here.
const client = new Client({ name: "tollgate-e2e-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
const transport = new StreamableHTTPClientTransport(new URL(process.env.TOLLGATE_MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.TOLLGATE_KEY}` } },
  fetch: recording,
});
await client.connect(transport);
const out = {
  era: client.getProtocolEra() ?? null,
  protocol: client.getNegotiatedProtocolVersion() ?? null,
  session: transport.sessionId ?? null,
};
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const r = await client.callTool({ name: process.env.TOOL, arguments: JSON.parse(process.env.ARGS ?? "{}") });
out.call = { text: text(r), isError: r.isError ?? false };
try {
  await client.callTool({ name: process.env.DENIED, arguments: {} });
  out.denied = { ok: true };
} catch (e) {
  out.denied = { ok: false, error: errorInfo(e) };
}
out.headers = headersSeen;
await client.close();
console.log(JSON.stringify(out));
