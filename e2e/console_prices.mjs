// The Models page's unit prices (#34) driven in Debian's Chromium (headless)
// with playwright-core. Usage: node console_prices.mjs; env CONSOLE_URL (the
// admin port's /ui/), ADMIN_KEY, VIEWER_KEY, CHROMIUM (browser binary).
// Prints one JSON object with what it observed; the Go test asserts on it.
import { chromium } from "playwright-core";

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const consoleURL = env("CONSOLE_URL");
const out = { console_errors: [] };

// models signs in and opens the Models page alone: reloaded, so that the
// keys page the sign-in started cannot render over it when it ends last.
async function models(page, key) {
  await page.goto(consoleURL);
  await page.getByLabel("Admin key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#who").filter({ hasText: "·" }).waitFor();
  await page.goto(consoleURL + "#/models");
  await page.reload();
  await page.locator('main[data-page="models"]').waitFor();
}

const browser = await chromium.launch({ executablePath: env("CHROMIUM"), headless: true, args: ["--no-sandbox"] });
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(90000);
  page.on("pageerror", (e) => out.console_errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) out.console_errors.push(m.text());
  });
  await models(page, env("ADMIN_KEY"));
  const units = (model) => page.locator(`[data-units="${model}"]`);

  // A unit price set with the CLI is shown.
  await units("whisper-1").waitFor();
  out.preset = await units("whisper-1").innerText();

  // Set per-image prices and a price per second on a model priced in tokens.
  await page.getByText("Set unit prices").click();
  const form = page.locator("#unit-prices form");
  await form.getByLabel("Model").fill("imagen");
  await form.getByLabel("Per image ($)").fill("1024x1024/hd=0.08, *=0.04");
  await form.getByLabel("Per search unit ($)").fill("0.002");
  await form.getByRole("button", { name: "Set" }).click();
  await units("imagen").waitFor();
  out.set = await units("imagen").innerText();
  out.set_row = await page.locator("tr", { has: units("imagen") }).innerText();

  // A bad per-image entry is refused in the page, nothing sent.
  await page.getByText("Set unit prices").click();
  await form.getByLabel("Model").fill("imagen");
  await form.getByLabel("Per image ($)").fill("huge");
  await form.getByRole("button", { name: "Set" }).click();
  out.bad = await page.locator("#status").innerText();

  // A viewer sees the prices, not the form.
  const vctx = await browser.newContext();
  const vpage = await vctx.newPage();
  vpage.setDefaultTimeout(90000);
  await models(vpage, env("VIEWER_KEY"));
  await vpage.locator('[data-units="imagen"]').waitFor();
  out.viewer_form = await vpage.locator("#unit-prices form").count();
  await vctx.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
