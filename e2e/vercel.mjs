// The Vercel AI SDK's default OpenAI provider (openai('model') speaks the
// Responses API) against a running Tollgate. Usage: node vercel.mjs <scenario>;
// env TOLLGATE_URL, TOLLGATE_KEY, TOLLGATE_MODEL. Prints one JSON object.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import { runScenario } from "./scenario.mjs";

const openai = createOpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: process.env.TOLLGATE_KEY });
const model = openai(process.env.TOLLGATE_MODEL ?? "demo");

const scenarios = {
  async generate() {
    const r = await generateText({ model, prompt: "Hello from the AI SDK", maxOutputTokens: 6, maxRetries: 0 });
    return { text: r.text, finish: r.finishReason, usage: r.usage };
  },
  async stream() {
    const r = streamText({ model, prompt: "Stream from the AI SDK", maxOutputTokens: 5, maxRetries: 0 });
    let text = "";
    let parts = 0;
    for await (const t of r.textStream) {
      text += t;
      parts++;
    }
    return { text, parts, finish: await r.finishReason, usage: await r.usage };
  },
};

await runScenario(scenarios, (e) => ({ class: e?.constructor?.name, message: e?.message, status: e?.statusCode, body: e?.responseBody }));
