// Scenarios run with Google's official Gen AI SDK (@google/genai) against a
// running Tollgate's Gemini API. Usage: node gemini.mjs <scenario>; env
// TOLLGATE_URL, TOLLGATE_KEY, TOLLGATE_MODEL (the model group),
// TOLLGATE_API_VERSION (v1, the SDK's default, or v1beta).
// Prints one JSON object with what the scenario observed; the Go test asserts on it.
import { GoogleGenAI } from "@google/genai";

const model = () => process.env.TOLLGATE_MODEL ?? "demo";

const client = (key = process.env.TOLLGATE_KEY) =>
  new GoogleGenAI({
    apiKey: key,
    apiVersion: process.env.TOLLGATE_API_VERSION || undefined,
    httpOptions: { baseUrl: process.env.TOLLGATE_URL, timeout: 20000, retryOptions: { attempts: 1 } },
  });

function errorInfo(e) {
  return { class: e?.constructor?.name, status: e?.status, message: e?.message };
}

const weatherTool = {
  functionDeclarations: [
    {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"] },
    },
  ],
};

const scenarios = {
  async generate() {
    const r = await client().models.generateContent({
      model: model(),
      contents: "Hello from the genai SDK",
      config: { maxOutputTokens: 8, systemInstruction: "Be brief." },
    });
    return { text: r.text, finish: r.candidates?.[0]?.finishReason, usage: r.usageMetadata };
  },
  async stream() {
    const s = await client().models.generateContentStream({
      model: model(),
      contents: "Stream to me please",
      config: { maxOutputTokens: 8 },
    });
    let text = "";
    let usage = null;
    let finish = null;
    let chunks = 0;
    for await (const c of s) {
      chunks++;
      text += c.text ?? "";
      if (c.usageMetadata) usage = c.usageMetadata;
      if (c.candidates?.[0]?.finishReason) finish = c.candidates[0].finishReason;
    }
    return { text, usage, finish, chunks };
  },
  // mockllm (and the translated providers) answer with one get_weather call.
  async toolcall() {
    const r = await client().models.generateContent({
      model: model(),
      contents: "What is the weather in Paris",
      config: { tools: [weatherTool], maxOutputTokens: 64, httpOptions: { headers: { "x-mock-tool-call": "get_weather" } } },
    });
    const calls = r.functionCalls ?? [];
    return { name: calls[0]?.name, args: calls[0]?.args, usage: r.usageMetadata };
  },
  async count() {
    const r = await client().models.countTokens({ model: model(), contents: "Count these tokens please" });
    return { total: r.totalTokens };
  },
  // models.get of a model the key may use, and of one it may not.
  async get() {
    const m = await client().models.get({ model: model() });
    let missing = null;
    try {
      await client().models.get({ model: "no-such-model" });
    } catch (e) {
      missing = errorInfo(e);
    }
    return { name: m.name, methods: m.supportedActions, missing };
  },
  async badkey() {
    try {
      await client("tg-not-a-key").models.generateContent({ model: model(), contents: "hi" });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e) };
    }
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`unknown scenario ${name}`);
  process.exit(2);
}
try {
  console.log(JSON.stringify(await scenarios[name]()));
} catch (e) {
  console.log(JSON.stringify({ thrown: errorInfo(e) }));
  process.exit(1);
}
