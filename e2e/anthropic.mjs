// Scenarios run with the official Anthropic Node SDK against a running Tollgate.
// Usage: node anthropic.mjs <scenario>; env TOLLGATE_URL, TOLLGATE_KEY,
// TOLLGATE_MODEL (the model group), TOLLGATE_AUTH ("bearer" sends the key as
// Authorization: Bearer, as Claude Code does with ANTHROPIC_AUTH_TOKEN).
// Prints one JSON object with what the scenario observed; the Go test asserts on it.
import Anthropic from "@anthropic-ai/sdk";

const model = () => process.env.TOLLGATE_MODEL ?? "demo";

const client = (key = process.env.TOLLGATE_KEY, opts = {}) =>
  new Anthropic({
    baseURL: process.env.TOLLGATE_URL,
    ...(process.env.TOLLGATE_AUTH === "bearer" ? { authToken: key, apiKey: null } : { apiKey: key }),
    maxRetries: 0,
    timeout: 20000,
    ...opts,
  });

function errorInfo(e) {
  return {
    class: e?.constructor?.name,
    status: e?.status,
    type: e?.error?.error?.type ?? e?.type,
    message: e?.message,
    retryAfter: e?.headers?.get?.("retry-after") ?? null,
  };
}

// A system prompt long enough to be worth caching, marked for the cache.
const system = [{ type: "text", text: "You are a careful assistant. ".repeat(20), cache_control: { type: "ephemeral" } }];

const weatherTools = [
  {
    name: "get_weather",
    description: "Current weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];
const toolMessages = [{ role: "user", content: "What is the weather in Paris" }];

const scenarios = {
  async models() {
    const page = await client().models.list();
    const one = await client().models.retrieve(page.data[0].id);
    return { ids: page.data.map((m) => m.id), types: page.data.map((m) => m.type), hasMore: page.has_more, one };
  },
  async messages() {
    const r = await client().messages.create({
      model: model(),
      max_tokens: 8,
      system,
      messages: [{ role: "user", content: "Hello from the Anthropic SDK" }],
    });
    return { type: r.type, text: r.content.map((b) => b.text ?? "").join(""), stop: r.stop_reason, usage: r.usage };
  },
  async stream() {
    const s = await client().messages.create({
      model: model(),
      max_tokens: 8,
      system,
      stream: true,
      messages: [{ role: "user", content: "Stream to me please" }],
    });
    let text = "";
    let start = null;
    let delta = null;
    let stop = null;
    const events = [];
    for await (const ev of s) {
      events.push(ev.type);
      if (ev.type === "message_start") start = ev.message.usage;
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
      if (ev.type === "message_delta") {
        delta = ev.usage;
        stop = ev.delta.stop_reason;
      }
    }
    return { text, start, delta, stop, events };
  },
  async tools() {
    const r = await client().messages.create({
      model: model(),
      max_tokens: 8,
      tools: [
        {
          name: "get_weather",
          description: "Current weather in a city",
          input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ],
      tool_choice: { type: "auto" },
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_01", name: "get_weather", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "18C and sunny" }] },
      ],
    });
    return { type: r.type, blocks: r.content.map((b) => b.type), stop: r.stop_reason, usage: r.usage };
  },
  // mockllm answers with one get_weather call (x-mock-tool-call).
  async toolcall() {
    const r = await client().messages.create(
      { model: model(), max_tokens: 64, tools: weatherTools, messages: toolMessages },
      { headers: { "x-mock-tool-call": "get_weather" } },
    );
    const uses = r.content.filter((b) => b.type === "tool_use");
    return {
      blocks: r.content.map((b) => b.type),
      name: uses[0]?.name,
      id: uses[0]?.id,
      input: uses[0]?.input,
      stop: r.stop_reason,
      usage: r.usage,
    };
  },
  async toolstream() {
    const s = await client().messages.create(
      { model: model(), max_tokens: 64, tools: weatherTools, messages: toolMessages, stream: true },
      { headers: { "x-mock-tool-call": "get_weather" } },
    );
    const blocks = [];
    let partial = "";
    let stop = null;
    let delta = null;
    for await (const ev of s) {
      if (ev.type === "content_block_start") blocks.push(ev.content_block);
      if (ev.type === "content_block_delta" && ev.delta.type === "input_json_delta") partial += ev.delta.partial_json;
      if (ev.type === "message_delta") {
        stop = ev.delta.stop_reason;
        delta = ev.usage;
      }
    }
    const use = blocks.find((b) => b.type === "tool_use");
    return {
      blocks: blocks.map((b) => b.type),
      name: use?.name,
      id: use?.id,
      input: partial ? JSON.parse(partial) : null,
      stop,
      delta,
    };
  },
  async count() {
    const r = await client().messages.countTokens({
      model: model(),
      system,
      messages: [{ role: "user", content: "Count me" }],
    });
    return { inputTokens: r.input_tokens };
  },
  async badkey() {
    try {
      await client("tg-not-a-real-key").messages.create({ model: model(), max_tokens: 4, messages: [{ role: "user", content: "x" }] });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isAuth: e instanceof Anthropic.AuthenticationError };
    }
  },
  // The provider answers 429 (mockllm's x-mock-status): the SDK raises a
  // RateLimitError carrying retry-after.
  async ratelimit() {
    try {
      await client(undefined, { defaultHeaders: { "x-mock-status": "429" } }).messages.create({
        model: model(),
        max_tokens: 4,
        messages: [{ role: "user", content: "x" }],
      });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isRateLimit: e instanceof Anthropic.RateLimitError };
    }
  },
  // Message Batches through the gateway (docs/batches.md): create,
  // retrieve until ended, results (read from the results_url the gateway
  // gives); another key (TOLLGATE_OTHER_KEY) is denied the batch.
  async batch() {
    const c = client();
    const maxTokens = Number(process.env.TOLLGATE_MAX_TOKENS ?? 16);
    let b;
    try {
      b = await c.messages.batches.create({
        requests: ["first", "second request"].map((text, i) => ({
          custom_id: `req-${i}`,
          params: { model: model(), max_tokens: maxTokens, messages: [{ role: "user", content: text }] },
        })),
      });
    } catch (e) {
      return { createError: errorInfo(e) };
    }
    const created = b.processing_status;
    const deadline = Date.now() + 30000;
    while (b.processing_status !== "ended" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      b = await c.messages.batches.retrieve(b.id);
    }
    const results = [];
    for await (const r of await c.messages.batches.results(b.id)) results.push(r);
    let denied = null;
    try {
      await client(process.env.TOLLGATE_OTHER_KEY).messages.batches.retrieve(b.id);
    } catch (e) {
      denied = errorInfo(e);
    }
    const listed = [];
    for await (const x of c.messages.batches.list()) listed.push(x.id);
    return { id: b.id, created, status: b.processing_status, resultsURL: b.results_url, counts: b.request_counts, results, denied, listed };
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenarios[name]()));
