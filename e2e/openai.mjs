// Scenarios run with the official OpenAI Node SDK against a running Tollgate.
// Usage: node openai.mjs <scenario>; env TOLLGATE_URL, TOLLGATE_KEY.
// Prints one JSON object with what the scenario observed; the Go test asserts on it.
import OpenAI, { toFile } from "openai";

const client = (key = process.env.TOLLGATE_KEY, opts = {}) =>
  new OpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: key, maxRetries: 0, timeout: 20000, ...opts });

function errorInfo(e) {
  return {
    class: e?.constructor?.name,
    status: e?.status,
    type: e?.error?.type ?? e?.type,
    code: e?.error?.code ?? e?.code,
    message: e?.message,
    retryAfter: e?.headers?.get?.("retry-after") ?? null,
    rateLimitRemaining: e?.headers?.get?.("x-ratelimit-remaining-requests") ?? null,
  };
}

const weatherTools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];
const toolMessages = [{ role: "user", content: "What is the weather in Paris" }];

const scenarios = {
  async models() {
    const page = await client().models.list();
    return { ids: page.data.map((m) => m.id) };
  },
  async chat() {
    const r = await client().chat.completions.create({
      model: process.env.TOLLGATE_MODEL ?? "demo",
      messages: [{ role: "user", content: "Hello from the OpenAI SDK" }],
      max_tokens: 8,
    });
    return { content: r.choices[0].message.content, usage: r.usage, finish: r.choices[0].finish_reason };
  },
  async stream() {
    const s = await client().chat.completions.create({
      model: process.env.TOLLGATE_MODEL ?? "demo",
      messages: [{ role: "user", content: "Stream to me" }],
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage = null;
    let chunks = 0;
    for await (const c of s) {
      chunks++;
      if (c.choices?.[0]?.delta?.content) text += c.choices[0].delta.content;
      if (c.usage) usage = c.usage;
    }
    return { text, usage, chunks };
  },
  // mockllm answers with one get_weather call (x-mock-tool-call).
  async toolcall() {
    const r = await client().chat.completions.create(
      { model: process.env.TOLLGATE_MODEL ?? "demo", messages: toolMessages, tools: weatherTools, max_tokens: 64 },
      { headers: { "x-mock-tool-call": "get_weather" } },
    );
    const tc = r.choices[0].message.tool_calls?.[0];
    return {
      name: tc?.function?.name,
      id: tc?.id,
      args: tc ? JSON.parse(tc.function.arguments) : null,
      calls: r.choices[0].message.tool_calls?.length ?? 0,
      finish: r.choices[0].finish_reason,
      usage: r.usage,
    };
  },
  async toolstream() {
    const s = await client().chat.completions.create(
      {
        model: process.env.TOLLGATE_MODEL ?? "demo",
        messages: toolMessages,
        tools: weatherTools,
        max_tokens: 64,
        stream: true,
        stream_options: { include_usage: true },
      },
      { headers: { "x-mock-tool-call": "get_weather" } },
    );
    const calls = {};
    let finish = null;
    let usage = null;
    for await (const c of s) {
      for (const d of c.choices?.[0]?.delta?.tool_calls ?? []) {
        const t = (calls[d.index] ??= { name: "", arguments: "" });
        if (d.id) t.id = d.id;
        if (d.function?.name) t.name += d.function.name;
        if (d.function?.arguments) t.arguments += d.function.arguments;
      }
      if (c.choices?.[0]?.finish_reason) finish = c.choices[0].finish_reason;
      if (c.usage) usage = c.usage;
    }
    const tc = calls[0];
    return {
      name: tc?.name,
      id: tc?.id,
      args: tc ? JSON.parse(tc.arguments) : null,
      calls: Object.keys(calls).length,
      finish,
      usage,
    };
  },
  async embeddings() {
    const r = await client().embeddings.create({ model: process.env.TOLLGATE_MODEL ?? "demo", input: "embed me" });
    return { dims: r.data[0].embedding.length, usage: r.usage };
  },
  async badkey() {
    try {
      await client("tg-not-a-real-key").chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }] });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isAuth: e instanceof OpenAI.AuthenticationError };
    }
  },
  async unknownmodel() {
    try {
      await client().chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isNotFound: e instanceof OpenAI.NotFoundError };
    }
  },
  // Sends requests until one is rate limited; reports the error and how many passed.
  async ratelimit() {
    const c = client();
    for (let i = 0; i < 20; i++) {
      try {
        await c.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }], max_tokens: 1 });
      } catch (e) {
        return { passed: i, error: errorInfo(e), isRateLimit: e instanceof OpenAI.RateLimitError };
      }
    }
    return { passed: 20, error: null };
  },
  // Sends requests until the budget refuses one.
  async budget() {
    const c = client();
    for (let i = 0; i < 50; i++) {
      try {
        await c.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "x" }], max_tokens: 16 });
      } catch (e) {
        return { passed: i, error: errorInfo(e) };
      }
    }
    return { passed: 50, error: null };
  },
  // The Batch API through the gateway (docs/batches.md): files.create,
  // batches.create, batches.retrieve until it ends, files.content for the
  // results; another key (TOLLGATE_OTHER_KEY) is denied the files and the
  // batch. TOLLGATE_MAX_TOKENS sets each line's max_tokens.
  async batch() {
    const maxTokens = Number(process.env.TOLLGATE_MAX_TOKENS ?? 8);
    const lines = [0, 1, 2].map((i) =>
      JSON.stringify({
        custom_id: `line-${i}`,
        method: "POST",
        url: "/v1/chat/completions",
        body: {
          model: process.env.TOLLGATE_MODEL ?? "demo",
          max_tokens: maxTokens,
          messages: [{ role: "user", content: `batch line ${i} ` + "word ".repeat(i) }],
        },
      }),
    );
    const file = await client().files.create({ file: await toFile(Buffer.from(lines.join("\n") + "\n"), "batch.jsonl"), purpose: "batch" });
    let b;
    try {
      b = await client().batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    } catch (e) {
      return { fileId: file.id, createError: errorInfo(e) };
    }
    const created = b.status;
    const deadline = Date.now() + 30000;
    while (!["completed", "failed", "cancelled", "expired"].includes(b.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      b = await client().batches.retrieve(b.id);
    }
    const content = await (await client().files.content(b.output_file_id)).text();
    const other = client(process.env.TOLLGATE_OTHER_KEY);
    const denied = {};
    for (const [what, f] of Object.entries({
      content: () => other.files.content(b.output_file_id),
      retrieveFile: () => other.files.retrieve(file.id),
      deleteFile: () => other.files.delete(file.id),
      useFile: () => other.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
      retrieveBatch: () => other.batches.retrieve(b.id),
    })) {
      try {
        await f();
        denied[what] = null;
      } catch (e) {
        denied[what] = errorInfo(e);
      }
    }
    const listed = [];
    for await (const x of client().batches.list()) listed.push(x.id);
    return {
      fileId: file.id,
      batchId: b.id,
      created,
      status: b.status,
      counts: b.request_counts,
      output: content.trim().split("\n").map((l) => JSON.parse(l)),
      denied,
      listed,
    };
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error("unknown scenario", name);
  process.exit(2);
}
try {
  console.log(JSON.stringify(await scenarios[name]()));
} catch (e) {
  console.log(JSON.stringify({ fatal: errorInfo(e) }));
}
