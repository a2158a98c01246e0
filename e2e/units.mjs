// The routes charged per unit with the official OpenAI Node SDK against a
// running Tollgate (#34). Usage: node units.mjs <scenario>; env TOLLGATE_URL,
// TOLLGATE_KEY. Prints one JSON object with what the scenario observed.
import OpenAI, { toFile } from "openai";

const client = () =>
  new OpenAI({ baseURL: process.env.TOLLGATE_URL + "/v1", apiKey: process.env.TOLLGATE_KEY, maxRetries: 0, timeout: 30000 });

// wav is a PCM WAV file of secs seconds of 8 kHz 8-bit mono silence.
function wav(secs) {
  const data = 8000 * secs;
  const b = Buffer.alloc(44 + data, 0x80);
  b.write("RIFF", 0);
  b.writeUInt32LE(36 + data, 4);
  b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(8000, 24); // sample rate
  b.writeUInt32LE(8000, 28); // byte rate
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write("data", 36);
  b.writeUInt32LE(data, 40);
  return b;
}

// A 2×1 PNG to edit, and its mask: the left pixel transparent (edit there).
const EDIT_IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAAEUlEQVR4nGM4wcX1n+sE138AD1kDtwh5E2EAAAAASUVORK5CYII=";
const EDIT_MASK = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAADElEQVR4nGNggID/AAEIAQBNGY85AAAAAElFTkSuQmCC";

const scenarios = {
  async images() {
    const r = await client().images.generate({ model: "dall-e-3", prompt: "a red fox", n: 2, size: "1024x1024", quality: "hd" });
    return { images: r.data.length, b64: r.data[0].b64_json?.length ?? 0 };
  },
  async transcription() {
    const file = await toFile(wav(3), "speech.wav", { type: "audio/wav" });
    const r = await client().audio.transcriptions.create({ model: "whisper-1", file });
    return { text: r.text };
  },
  async speech() {
    const r = await client().audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hello from the SDK", response_format: "wav" });
    const b = Buffer.from(await r.arrayBuffer());
    return { bytes: b.length, riff: b.subarray(0, 4).toString(), contentType: r.headers.get("content-type") };
  },
  // Imagen through the gateway (OpenAI's images API in, :predict out); the
  // prompt's [filter] has the mock withhold one of the three images.
  async imagen() {
    const r = await client().images.generate({ model: "imagen", prompt: "a lighthouse [filter]", n: 3, size: "1792x1024" });
    return { images: r.data.length, b64: r.data[0].b64_json?.length ?? 0 };
  },
  // gpt-image-1, charged by the tokens of its reply's usage.
  async gptimage() {
    const r = await client().images.generate({ model: "gpt-image-1", prompt: "a cat in a hat", n: 2, quality: "low" });
    return { images: r.data.length, usage: r.usage };
  },
  // An edit on Vertex's Imagen capability model (OpenAI's multipart edits
  // in, :predict with referenceImages out): with a mask (transparent where to
  // edit) and without.
  async imagenedit() {
    const png = (b64, name) => toFile(Buffer.from(b64, "base64"), name, { type: "image/png" });
    const image = () => png(EDIT_IMAGE, "fox.png");
    const masked = await client().images.edit({ model: "imagen-edit", image: await image(), mask: await png(EDIT_MASK, "mask.png"), prompt: "a red hat on the fox", n: 2 });
    const plain = await client().images.edit({ model: "imagen-edit", image: await image(), prompt: "make it dusk" });
    return { masked: masked.data.length, plain: plain.data.length, b64: masked.data[0].b64_json?.length ?? 0 };
  },
  // gpt-image-1 streamed: partial previews, then each image's completed
  // event with its usage.
  async gptimagestream() {
    const stream = await client().images.generate({ model: "gpt-image-1", prompt: "a fox in the snow", n: 2, quality: "low", stream: true, partial_images: 2 });
    const seen = { partial: 0, completed: 0, input: 0, output: 0 };
    for await (const ev of stream) {
      if (ev.type === "image_generation.partial_image") seen.partial++;
      if (ev.type === "image_generation.completed") {
        seen.completed++;
        seen.input = Math.max(seen.input, ev.usage.input_tokens);
        seen.output += ev.usage.output_tokens;
      }
    }
    return seen;
  },
  // A model without a price per image, under a strict budget: refused.
  async unpriced() {
    const r = await client().images.generate({ model: "dall-e-2", prompt: "a square", n: 1, size: "512x512" });
    return { images: r.data.length };
  },
  async moderations() {
    const r = await client().moderations.create({ model: "omni-moderation-latest", input: "is this fine?" });
    return { results: r.results.length, flagged: r.results[0].flagged };
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
  console.log(JSON.stringify({ error: { class: e?.constructor?.name, status: e?.status, message: e?.message, code: e?.code } }));
}
