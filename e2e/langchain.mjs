// LangChain JS (@langchain/openai ChatOpenAI) against a running Tollgate,
// on chat completions or, with TOLLGATE_RESPONSES=1, on the Responses API
// (useResponsesApi). Usage: node langchain.mjs <scenario>; env TOLLGATE_URL,
// TOLLGATE_KEY, TOLLGATE_MODEL. Prints one JSON object.
import { ChatOpenAI } from "@langchain/openai";
import { runScenario } from "./scenario.mjs";

const llm = new ChatOpenAI({
  model: process.env.TOLLGATE_MODEL ?? "demo",
  apiKey: process.env.TOLLGATE_KEY,
  configuration: { baseURL: process.env.TOLLGATE_URL + "/v1" },
  maxTokens: 8,
  maxRetries: 0,
  useResponsesApi: process.env.TOLLGATE_RESPONSES === "1",
});

const scenarios = {
  async invoke() {
    const r = await llm.invoke("Hello from LangChain");
    return { text: r.text, usage: r.usage_metadata };
  },
  async stream() {
    let text = "";
    let chunks = 0;
    let last;
    for await (const c of await llm.stream("Stream from LangChain")) {
      text += c.text;
      chunks++;
      last = last ? last.concat(c) : c;
    }
    return { text, chunks, usage: last?.usage_metadata };
  },
};

await runScenario(scenarios, (e) => ({ class: e?.constructor?.name, message: e?.message, status: e?.status }));
