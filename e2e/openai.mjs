// Scenarios run with the official OpenAI Node SDK against a running Tollgate.
// Usage: node openai.mjs <scenario>; env TOLLGATE_URL, TOLLGATE_KEY.
// Prints one JSON object with what the scenario observed; the Go test asserts on it.
import OpenAI from "openai";

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
