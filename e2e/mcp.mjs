// Scenarios run with the official MCP TypeScript SDK (@modelcontextprotocol/sdk
// 1.x, protocol 2025-11-25) against a running Tollgate's /mcp.
// Usage: node mcp.mjs <scenario>; env TOLLGATE_MCP_URL (the endpoint),
// TOLLGATE_KEY, TOLLGATE_MCP_REPLICAS (comma-separated base URLs the session
// alternates between, for "session"), TOOL and ARGS (JSON) for "call",
// PROMPT, ARGS and DENIED_URI for "resources".
// Prints one JSON object with what the scenario observed; the Go test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = () => new URL(process.env.TOLLGATE_MCP_URL);

async function connect(key = process.env.TOLLGATE_KEY, fetchImpl) {
  const client = new Client({ name: "tollgate-e2e", version: "1.0.0" });
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const transport = new StreamableHTTPClientTransport(url(), { requestInit: { headers }, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  await client.connect(transport);
  return { client, transport };
}

function errorInfo(e) {
  return { code: e?.code ?? null, message: String(e?.message ?? e) };
}

const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("");

const scenarios = {
  async list() {
    const { client, transport } = await connect();
    const { tools } = await client.listTools();
    const out = { protocol: transport.protocolVersion ?? null, session: transport.sessionId ?? null, tools: tools.map((t) => t.name).sort() };
    await client.close();
    return out;
  },
  async call() {
    const { client } = await connect();
    try {
      const r = await client.callTool({ name: process.env.TOOL, arguments: JSON.parse(process.env.ARGS ?? "{}") });
      return { ok: true, text: text(r), isError: r.isError ?? false };
    } catch (e) {
      return { ok: false, error: errorInfo(e) };
    } finally {
      await client.close();
    }
  },
  // Resources and prompts: lists, a read of the first resource, a prompt
  // (PROMPT with ARGS), and a read of DENIED_URI that the grants refuse.
  async resources() {
    const { client } = await connect();
    const caps = client.getServerCapabilities() ?? {};
    const { resources } = await client.listResources();
    const { resourceTemplates } = await client.listResourceTemplates();
    const { prompts } = await client.listPrompts();
    const out = {
      capabilities: Object.keys(caps).sort(),
      resources: resources.map((r) => r.uri),
      templates: resourceTemplates.map((r) => r.uriTemplate),
      prompts: prompts.map((p) => p.name).sort(),
    };
    if (resources.length > 0) {
      const r = await client.readResource({ uri: resources[0].uri });
      out.read = { uri: r.contents[0]?.uri ?? null, size: (r.contents[0]?.text ?? r.contents[0]?.blob ?? "").length };
    }
    if (process.env.PROMPT) {
      const p = await client.getPrompt({ name: process.env.PROMPT, arguments: JSON.parse(process.env.ARGS ?? "{}") });
      out.prompt = p.messages.map((m) => m.content.text ?? "").join("");
    }
    if (process.env.DENIED_URI) {
      try {
        await client.readResource({ uri: process.env.DENIED_URI });
        out.denied = { ok: true };
      } catch (e) {
        out.denied = { ok: false, error: errorInfo(e) };
      }
    }
    await client.close();
    return out;
  },
  async unauthorized() {
    try {
      await connect("");
      return { ok: true };
    } catch (e) {
      return { ok: false, error: errorInfo(e) };
    }
  },
  // One 2025-11-25 session whose requests go to the replicas in turn.
  async session() {
    const replicas = process.env.TOLLGATE_MCP_REPLICAS.split(",");
    const seen = new Set();
    let n = 0;
    const alternate = (input, init) => {
      const u = new URL(input instanceof Request ? input.url : String(input));
      const base = new URL(replicas[n++ % replicas.length]);
      u.host = base.host;
      seen.add(u.host);
      return fetch(u, init);
    };
    const { client, transport } = await connect(undefined, alternate);
    const echoes = [];
    for (let i = 0; i < 4; i++) {
      const r = await client.callTool({ name: process.env.TOOL, arguments: { [process.env.ARG_NAME ?? "message"]: `hop ${i}` } });
      echoes.push(text(r));
    }
    const out = { session: transport.sessionId ?? null, replicas: [...seen].length, echoes };
    await transport.terminateSession().catch(() => {});
    await client.close();
    return out;
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenarios[name]()));
