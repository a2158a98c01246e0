// OpenAI's legacy completions API (client.completions.create) run with the
// official OpenAI Node SDK against a running Tollgate, for the provider
// types that serve it through chat (gemini, bedrock, vertex). Usage: node
// completions.mjs <scenario>; env TOLLGATE_URL, TOLLGATE_KEY, TOLLGATE_MODEL.
// Prints one JSON object with what the scenario observed; the Go test
// asserts on it.
import OpenAI from "openai";
import { runScenario } from "./scenario.mjs";

const client = () =>
  new OpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: process.env.TOLLGATE_KEY, maxRetries: 0, timeout: 20000 });
const model = process.env.TOLLGATE_MODEL ?? "demo";

function errorInfo(e) {
  return { class: e?.constructor?.name, status: e?.status, type: e?.error?.type ?? e?.type, message: e?.message };
}

const scenarios = {
  async create() {
    const r = await client().completions.create({ model, prompt: "Say this is a test", max_tokens: 6, temperature: 0 });
    return { object: r.object, model: r.model, text: r.choices[0].text, finish: r.choices[0].finish_reason, usage: r.usage };
  },
  async stream() {
    const s = await client().completions.create({
      model,
      prompt: "Stream a completion",
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish = null;
    let usage = null;
    let objects = new Set();
    for await (const c of s) {
      objects.add(c.object);
      for (const ch of c.choices) {
        text += ch.text;
        if (ch.finish_reason) finish = ch.finish_reason;
      }
      if (c.usage) usage = c.usage;
    }
    return { objects: [...objects], text, finish, usage };
  },
  async echo() {
    try {
      await client().completions.create({ model, prompt: "x", echo: true });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isBadRequest: e instanceof OpenAI.BadRequestError };
    }
  },
};

await runScenario(scenarios, errorInfo);
