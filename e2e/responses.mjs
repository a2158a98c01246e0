// Scenarios of OpenAI's Responses API run with the official OpenAI Node SDK
// against a running Tollgate. Usage: node responses.mjs <scenario>; env
// TOLLGATE_URL, TOLLGATE_KEY, TOLLGATE_MODEL. Prints one JSON object with what
// the scenario observed; the Go test asserts on it.
import OpenAI from "openai";
import { runScenario } from "./scenario.mjs";

const client = (key = process.env.TOLLGATE_KEY) =>
  new OpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: key, maxRetries: 0, timeout: 20000 });
const model = process.env.TOLLGATE_MODEL ?? "demo";

function errorInfo(e) {
  return { class: e?.constructor?.name, status: e?.status, type: e?.error?.type ?? e?.type, code: e?.error?.code ?? e?.code, message: e?.message };
}

// fail runs f and returns its error's errorInfo, null when it succeeds.
async function fail(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return errorInfo(e);
  }
}

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Current weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
};

const summary = (r) => ({
  id: r.id,
  object: r.object,
  status: r.status,
  model: r.model,
  text: r.output_text,
  types: r.output.map((o) => o.type),
  usage: r.usage,
  incomplete: r.incomplete_details?.reason ?? null,
});

const scenarios = {
  async create() {
    const r = await client().responses.create({ model, instructions: "Answer briefly.", input: "Hello from the Responses API", max_output_tokens: 6 });
    return summary(r);
  },
  async items() {
    const r = await client().responses.create({
      model,
      input: [
        { role: "developer", content: "Be terse." },
        { role: "user", content: [{ type: "input_text", text: "Say something" }] },
      ],
      temperature: 0.5,
      top_p: 0.9,
      metadata: { run: "e2e" },
      user: "e2e-user",
    });
    return { ...summary(r), metadata: r.metadata };
  },
  // The raw event stream: names, sequence numbers, deltas, the final usage.
  async stream() {
    const s = await client().responses.create({ model, input: "Stream some words to me", max_output_tokens: 5, stream: true });
    const types = [];
    const seqs = [];
    let text = "";
    let final = null;
    for await (const ev of s) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
    }
    return { types, seqs, text, final: final && summary(final) };
  },
  // The SDK's stream helper, which checks the event order and builds the response.
  async final() {
    const stream = client().responses.stream({ model, input: "Final response please", max_output_tokens: 7 });
    let deltas = "";
    stream.on("response.output_text.delta", (ev) => (deltas += ev.delta));
    const r = await stream.finalResponse();
    return { ...summary(r), deltas };
  },
  // A function call (mockllm answers get_weather), then its output sent back
  // with previous_response_id (stored responses) or as explicit items (store: false).
  async tools() {
    const c = client();
    const opts = { headers: { "x-mock-tool-call": "get_weather" } };
    const first = await c.responses.create({ model, input: "What is the weather in Paris", tools: [weatherTool], tool_choice: "auto" }, opts);
    const call = first.output.find((o) => o.type === "function_call");
    const out = { type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ temperature: 18 }) };
    const second = process.env.TOLLGATE_STORED
      ? await c.responses.create({ model, previous_response_id: first.id, input: [out], tools: [weatherTool] })
      : await c.responses.create({ model, input: [{ role: "user", content: "What is the weather in Paris" }, call, out], tools: [weatherTool], store: false });
    return { first: summary(first), call: { name: call.name, callID: call.call_id, args: JSON.parse(call.arguments) }, second: summary(second) };
  },
  // Native responses owned by the key (issue 37): a chain of three turns, each
  // naming the deployment that served it; retrieve, input items, delete;
  // another key's retrieve, input items, delete and previous_response_id;
  // a background response polled to completion.
  async native() {
    const c = client();
    const other = client(process.env.TOLLGATE_OTHER_KEY);
    const turns = [];
    let prev;
    for (const input of ["alpha beta", "gamma", "delta"]) {
      const { data, response } = await c.responses.create({ model, input, ...(prev ? { previous_response_id: prev } : {}) }).withResponse();
      turns.push({ id: data.id, previous: data.previous_response_id, deployment: response.headers.get("x-tollgate-deployment") });
      prev = data.id;
    }
    const [r1, , r3] = turns;
    const got = await c.responses.retrieve(r3.id);
    const items = [];
    for await (const it of c.responses.inputItems.list(r1.id)) items.push(it);
    const otherRetrieve = await fail(() => other.responses.retrieve(r1.id));
    const otherItems = await fail(async () => {
      for await (const it of other.responses.inputItems.list(r1.id)) void it;
    });
    const otherDelete = await fail(() => other.responses.delete(r1.id));
    const otherPrevious = await fail(() => other.responses.create({ model, input: "steal", previous_response_id: r1.id }));
    await c.responses.delete(r1.id);
    const deleted = await fail(() => c.responses.retrieve(r1.id));
    const { data: bg, response: bgResp } = await c.responses.create({ model, input: "in the background please", background: true }).withResponse();
    const statuses = [bg.status];
    let polled = bg;
    for (let i = 0; i < 20 && (polled.status === "queued" || polled.status === "in_progress"); i++) {
      polled = await c.responses.retrieve(bg.id);
      statuses.push(polled.status);
    }
    const again = await c.responses.retrieve(bg.id);
    return {
      turns,
      retrieved: summary(got),
      items: items.map((it) => ({ id: it.id, type: it.type, role: it.role })),
      otherRetrieve,
      otherItems,
      otherDelete,
      otherPrevious,
      deleted,
      background: { id: bg.id, requestID: bgResp.headers.get("x-tollgate-request-id"), statuses, final: summary(polled), again: again.status },
    };
  },
  // Conversations owned by the key (issue 37): created on the group the
  // x-tollgate-model header names, two responses in it (both on the
  // deployment holding it), its items, another key's 404s, update, delete.
  async conversations() {
    const c = client();
    const other = client(process.env.TOLLGATE_OTHER_KEY);
    const { data: conv, response: created } = await c.conversations
      .create({ metadata: { topic: "e2e" }, items: [{ type: "message", role: "user", content: "remember the word kiwi" }] }, { headers: { "x-tollgate-model": model } })
      .withResponse();
    const turns = [];
    for (const ref of [conv.id, { id: conv.id }]) {
      const { data, response } = await c.responses.create({ model, input: "and now?", conversation: ref }).withResponse();
      turns.push({ id: data.id, conversation: data.conversation?.id, deployment: response.headers.get("x-tollgate-deployment") });
    }
    const items = [];
    for await (const it of c.conversations.items.list(conv.id, { order: "asc" })) items.push({ id: it.id, type: it.type, role: it.role });
    const otherRetrieve = await fail(() => other.conversations.retrieve(conv.id));
    const otherItems = await fail(async () => {
      for await (const it of other.conversations.items.list(conv.id)) void it;
    });
    const otherResponse = await fail(() => other.responses.create({ model, input: "steal", conversation: conv.id }));
    const updated = await c.conversations.update(conv.id, { metadata: { topic: "changed" } });
    const del = await c.conversations.delete(conv.id);
    const gone = await fail(() => c.conversations.retrieve(conv.id));
    return {
      id: conv.id,
      deployment: created.headers.get("x-tollgate-deployment"),
      turns,
      items,
      otherRetrieve,
      otherItems,
      otherResponse,
      topic: updated.metadata.topic,
      deleted: del.deleted,
      gone,
    };
  },
  async toolstream() {
    const stream = client().responses.stream(
      { model, input: "What is the weather in Rome", tools: [weatherTool] },
      { headers: { "x-mock-tool-call": "get_weather" } },
    );
    let args = "";
    stream.on("response.function_call_arguments.delta", (ev) => (args += ev.delta));
    const r = await stream.finalResponse();
    const call = r.output.find((o) => o.type === "function_call");
    return { ...summary(r), args, call: call && { name: call.name, args: JSON.parse(call.arguments) } };
  },
  // Stored conversations: previous_response_id, retrieve, input_items, delete, store: false.
  async stored() {
    const c = client();
    const r1 = await c.responses.create({ model, input: "alpha beta gamma" });
    const r2 = await c.responses.create({ model, previous_response_id: r1.id, input: "delta epsilon" });
    const got = await c.responses.retrieve(r1.id);
    const items = [];
    for await (const it of c.responses.inputItems.list(r2.id, { order: "asc" })) items.push(it);
    const unstored = await c.responses.create({ model, input: "not kept", store: false });
    let unstoredErr = null;
    try {
      await c.responses.retrieve(unstored.id);
    } catch (e) {
      unstoredErr = errorInfo(e);
    }
    let otherErr = null;
    try {
      await client(process.env.TOLLGATE_OTHER_KEY).responses.retrieve(r1.id);
    } catch (e) {
      otherErr = errorInfo(e);
    }
    await c.responses.delete(r1.id);
    let deletedErr = null;
    try {
      await c.responses.retrieve(r1.id);
    } catch (e) {
      deletedErr = errorInfo(e);
    }
    return {
      r1: summary(r1),
      r2: summary(r2),
      retrieved: summary(got),
      items: items.map((i) => ({ type: i.type, role: i.role, id: i.id })),
      unstoredErr,
      otherErr,
      deletedErr,
    };
  },
  async badtool() {
    try {
      await client().responses.create({
        model,
        input: "x",
        tools: [{ type: "web_search" }],
        tool_choice: { type: "web_search" },
      });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isBadRequest: e instanceof OpenAI.BadRequestError };
    }
  },
  // droptool: built-in tools that are not forced are left out of a translated
  // request, and the reply's header names them.
  async droptool() {
    const { data, response } = await client()
      .responses.create({
        model,
        input: "x",
        tools: [
          { type: "web_search" },
          { type: "custom", name: "apply_patch", description: "patch" },
          { type: "function", name: "get_weather", parameters: { type: "object", properties: {} } },
        ],
      })
      .withResponse();
    return { status: data.status, dropped: response.headers.get("x-tollgate-dropped-tools") };
  },
  async unknownmodel() {
    try {
      await client().responses.create({ model: "no-such-model", input: "x" });
      return { error: null };
    } catch (e) {
      return { error: errorInfo(e), isNotFound: e instanceof OpenAI.NotFoundError };
    }
  },
  async retrieveModel() {
    const m = await client().models.retrieve(model);
    let missing = null;
    try {
      await client().models.retrieve("no-such-model");
    } catch (e) {
      missing = errorInfo(e);
    }
    return { id: m.id, object: m.object, missing };
  },
};

await runScenario(scenarios, errorInfo);
