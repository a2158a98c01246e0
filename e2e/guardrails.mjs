// Guardrail scenarios with the official OpenAI, Anthropic and Google GenAI
// Node SDKs against a running Tollgate whose key has guardrails attached
// (e2e/guardrails_test.go sets them up).
// Usage: node guardrails.mjs <scenario>; env TOLLGATE_URL, TOLLGATE_KEY.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";

const key = process.env.TOLLGATE_KEY;
const openai = new OpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: key, maxRetries: 0, timeout: 20000 });
const anthropic = new Anthropic({ baseURL: process.env.TOLLGATE_URL, apiKey: key, maxRetries: 0, timeout: 20000 });
const genai = new GoogleGenAI({
  apiKey: key,
  httpOptions: { baseUrl: process.env.TOLLGATE_URL, timeout: 20000, retryOptions: { attempts: 1 } },
});

function errorInfo(e) {
  return {
    class: e?.constructor?.name,
    status: e?.status,
    type: e?.error?.type ?? e?.error?.error?.type ?? e?.type,
    code: e?.error?.code ?? e?.code,
    message: e?.message,
    guardrails: e?.headers?.get?.("x-tollgate-guardrails") ?? null,
  };
}

const scenarios = {
  async openai_block() {
    try {
      await openai.chat.completions.create({
        model: "demo",
        messages: [{ role: "user", content: "my card is 4111 1111 1111 1111" }],
        max_tokens: 8,
      });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e) };
    }
  },
  async openai_redact() {
    const r = await openai.chat.completions.create({
      model: "demo",
      messages: [{ role: "user", content: "write to jane.doe@example.com today" }],
      max_tokens: 5,
    });
    return { content: r.choices[0].message.content };
  },
  async openai_stream() {
    const s = await openai.chat.completions.create({
      model: "demo",
      messages: [{ role: "user", content: "call +1 415 555 2671 now" }],
      max_tokens: 6,
      stream: true,
    });
    let text = "";
    let chunks = 0;
    for await (const c of s) {
      chunks++;
      text += c.choices[0]?.delta?.content ?? "";
    }
    return { text, chunks };
  },
  async anthropic_block() {
    try {
      await anthropic.messages.create({
        model: "demo",
        max_tokens: 8,
        messages: [{ role: "user", content: "SSN 123-45-6789" }],
      });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e) };
    }
  },
  async genai_block() {
    try {
      await genai.models.generateContent({ model: "demo", contents: "my card is 4111 1111 1111 1111" });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e) };
    }
  },
  async genai_redact() {
    const r = await genai.models.generateContent({ model: "demo", contents: "mail jane.doe@example.com now" });
    return { content: r.text };
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
