// Scenarios of the response cache (docs/caching.md) with the official SDKs:
// each sends a deterministic request twice, plain first (a miss, stored)
// then streamed (a hit, replayed as the API's stream), and reports what the
// SDK parsed from the replayed stream. Usage: node cache.mjs <scenario>;
// env TOLLGATE_URL, TOLLGATE_KEY, TOLLGATE_MODEL (the model group).
// Prints one JSON object; the Go test asserts on it.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";

const model = () => process.env.TOLLGATE_MODEL ?? "demo";
const key = () => process.env.TOLLGATE_KEY;
const base = () => process.env.TOLLGATE_URL;
const tag = () => `${process.pid}-${Date.now()}`; // a prompt of this run only

const openai = () => new OpenAI({ baseURL: base() + "/v1", apiKey: key(), maxRetries: 0, timeout: 20000 });
const anthropic = () => new Anthropic({ baseURL: base(), apiKey: key(), maxRetries: 0, timeout: 20000 });
const genai = () =>
  new GoogleGenAI({ apiKey: key(), httpOptions: { baseUrl: base(), timeout: 20000, retryOptions: { attempts: 1 } } });

const scenarios = {
  async chat() {
    const req = { model: model(), temperature: 0, max_tokens: 8, messages: [{ role: "user", content: `cache chat ${tag()}` }] };
    const first = await openai().chat.completions.create(req).withResponse();
    const { data: stream, response } = await openai()
      .chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let text = "", finish = null, usage = null, chunks = 0;
    for await (const c of stream) {
      chunks++;
      for (const ch of c.choices) {
        text += ch.delta?.content ?? "";
        finish = ch.finish_reason ?? finish;
      }
      if (c.usage) usage = c.usage;
    }
    return {
      first: first.response.headers.get("x-tollgate-cache"),
      second: response.headers.get("x-tollgate-cache"),
      age: response.headers.get("age"),
      want: first.data.choices[0].message.content,
      text, finish, usage, chunks,
    };
  },
  async responses() {
    const req = { model: model(), temperature: 0, max_output_tokens: 16, input: `cache responses ${tag()}` };
    const first = await openai().responses.create(req).withResponse();
    const { data: stream, response } = await openai().responses.create({ ...req, stream: true }).withResponse();
    const types = [];
    let text = "", final = null, seq = [];
    for await (const ev of stream) {
      types.push(ev.type);
      seq.push(ev.sequence_number);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") final = ev.response;
    }
    return {
      first: first.response.headers.get("x-tollgate-cache"),
      second: response.headers.get("x-tollgate-cache"),
      want: first.data.output_text,
      text, types, seq, finalText: final?.output_text ?? final?.output?.[0]?.content?.[0]?.text, status: final?.status,
    };
  },
  async messages() {
    const req = { model: model(), temperature: 0, max_tokens: 8, messages: [{ role: "user", content: `cache messages ${tag()}` }] };
    const first = await anthropic().messages.create(req).withResponse();
    const s = anthropic().messages.stream(req);
    const events = [];
    s.on("streamEvent", (e) => events.push(e.type));
    const final = await s.finalMessage();
    const { response } = await s.withResponse();
    return {
      first: first.response.headers.get("x-tollgate-cache"),
      second: response.headers.get("x-tollgate-cache"),
      want: first.data.content.map((b) => b.text ?? "").join(""),
      text: final.content.map((b) => b.text ?? "").join(""),
      stop: final.stop_reason, usage: final.usage, events,
    };
  },
  async gemini() {
    const req = { model: model(), contents: `cache gemini ${tag()}`, config: { temperature: 0, maxOutputTokens: 8 } };
    const first = await genai().models.generateContent(req);
    let text = "", finish = null, usage = null, chunks = 0;
    for await (const c of await genai().models.generateContentStream(req)) {
      chunks++;
      text += c.text ?? "";
      finish = c.candidates?.[0]?.finishReason ?? finish;
      usage = c.usageMetadata ?? usage;
    }
    return { want: first.text, text, finish, usage, chunks };
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`unknown scenario ${name}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenarios[name]()));
