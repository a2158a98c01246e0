// The web console driven in Debian's Chromium (headless) with playwright-core,
// against a running Tollgate. Usage: node console.mjs; env CONSOLE_URL (the
// admin port's /ui/), TOLLGATE_URL (data plane), ADMIN_KEY, VIEWER_KEY,
// CHROMIUM (browser binary), SHOTS (screenshot directory).
// Prints one JSON object with what it observed; the Go test asserts on it.
import { chromium } from "playwright-core";

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const consoleURL = env("CONSOLE_URL");
const dataURL = env("TOLLGATE_URL");
const shots = env("SHOTS");
const out = { pages: [], console_errors: [], load_ms: {} };

async function chat(secret) {
  const r = await fetch(dataURL + "/v1/chat/completions", {
    method: "POST",
    headers: { Authorization: "Bearer " + secret, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "Hello from the console test" }] }),
  });
  await r.arrayBuffer();
  return r.status;
}

// chatUntil retries while the new key propagates to the data plane (bounded).
async function chatUntil(secret, want) {
  let got;
  for (let i = 0; i < 100; i++) {
    got = await chat(secret);
    if (got === want) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

async function signIn(page, key) {
  await page.goto(consoleURL);
  await page.getByLabel("Admin key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#who").filter({ hasText: "·" }).waitFor();
}

async function visit(page, name, ready, viewport) {
  const t0 = Date.now();
  await page.goto(consoleURL + "#/" + name);
  await page.locator(`main[data-page="${name}"]`).waitFor();
  if (!viewport) out.load_ms[name] = Date.now() - t0; // reported, not asserted
  if (ready) await ready();
  const file = `${shots}/${name}${viewport ? "-" + viewport : ""}.png`;
  await page.screenshot({ path: file, fullPage: true });
  out.pages.push(file);
}

const browser = await chromium.launch({ executablePath: env("CHROMIUM"), headless: true, args: ["--no-sandbox"] });
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => out.console_errors.push(String(e)));
  // Refused calls (the 401 of the session check, the 403s below) are expected;
  // any other error in the console is not.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) out.console_errors.push(m.text());
  });

  // A wrong key is refused on the sign-in page.
  await page.goto(consoleURL);
  await page.screenshot({ path: `${shots}/signin.png` });
  await page.getByLabel("Admin key").fill("tga-wrong");
  await page.getByRole("button", { name: "Sign in" }).click();
  out.bad_signin = await page.getByRole("alert").filter({ hasText: /unknown admin credential/ }).innerText();

  await signIn(page, env("ADMIN_KEY"));
  const cookies = await ctx.cookies();
  out.cookie = cookies.find((c) => c.name === "tollgate_session");

  // Create a team with a budget, then change its budget.
  await page.goto(consoleURL + "#/teams");
  await page.locator('main[data-page="teams"]').waitFor();
  const teamForm = page.locator("details", { hasText: "Create team" });
  await teamForm.locator("summary").click();
  await teamForm.getByLabel("ID").fill("platform");
  await teamForm.getByLabel("Name").fill("Platform");
  await teamForm.getByLabel("Budget ($)").fill("50");
  await teamForm.getByRole("button", { name: "Create" }).click();
  await page.locator("tbody tr", { hasText: "platform" }).waitFor();
  const limitsForm = page.locator("details", { hasText: "Set budget and limits" });
  await limitsForm.locator("summary").click();
  await limitsForm.getByLabel("Team").fill("platform");
  await limitsForm.getByLabel("Budget ($)").fill("20");
  await limitsForm.getByLabel("Period").selectOption("PERIOD_KIND_WEEKLY");
  await limitsForm.getByRole("button", { name: "Save" }).click();
  await page.locator("tbody tr", { hasText: "$20.00/weekly" }).waitFor();
  out.team_row = await page.locator("tbody tr", { hasText: "platform" }).innerText();

  // Create a key with a budget, rpm, models and expiry; read its secret once.
  await visit(page, "keys");
  await page.getByText("Create a key").click();
  const form = page.locator("details", { hasText: "Create a key" });
  await form.getByLabel("Alias").fill("console-e2e");
  await form.getByLabel("Team").selectOption("platform");
  await form.getByLabel("Budget ($)").fill("5");
  await form.getByLabel("Requests/min").fill("100");
  await form.getByLabel("Models (comma-separated)").fill("demo");
  await form.getByLabel("Expires").fill("2099-01-01");
  await form.getByRole("button", { name: "Create", exact: true }).click();
  const secret = (await page.locator("#secret-value").innerText()).trim();
  out.secret_prefix = secret.slice(0, 3);
  out.created = (await page.locator("#status").innerText()).replace(/^Created |\.$/g, "");
  await page.screenshot({ path: `${shots}/keys-secret.png`, fullPage: true });
  await page.getByRole("button", { name: "Copy" }).click();

  // The secret works against the data plane.
  out.chat_status = await chatUntil(secret, 200);

  // The request shows in the requests page, with its detail.
  await visit(page, "requests", async () => {
    await page.getByLabel("Key").fill(out.created);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator(`tbody tr`).filter({ hasText: out.created }).first().waitFor();
  });
  out.request_rows = await page.locator("tbody tr").filter({ hasText: out.created }).count();
  await page.locator("tbody tr").first().getByRole("button", { name: "Details" }).click();
  out.request_detail = await page.locator("#request-detail").innerText();
  await page.screenshot({ path: `${shots}/requests-detail.png`, fullPage: true });

  // And in the spend chart, stacked by key.
  await visit(page, "spend", async () => {
    await page.getByLabel("Stack by").selectOption("key");
    await page.locator(".charts[data-series]").filter({ hasText: "" }).waitFor();
    await page.waitForFunction((id) => (document.querySelector(".charts").dataset.series || "").includes(id), out.created);
  });
  out.spend_series = await page.evaluate(() => document.querySelector(".charts").dataset.series.split("\n"));
  out.top_spenders = await page.locator("section", { hasText: "Top spenders" }).innerText();
  out.budgets = await page.locator("section", { hasText: "Budgets used" }).innerText();
  await page.getByLabel("Stack by").selectOption("team");
  await page.getByLabel("Bucket").selectOption("3600s");
  await page.locator('.charts[data-drawn="team/3600s"]').waitFor();
  out.spend_by_team_hourly = await page.evaluate(() => document.querySelector(".charts").dataset.series.split("\n"));
  await page.screenshot({ path: `${shots}/spend-team-hourly.png`, fullPage: true });

  // Rotate with a grace period, then revoke.
  await visit(page, "keys");
  page.once("dialog", (d) => d.accept("1"));
  await page.locator(`button[data-action="rotate"][data-key="${out.created}"]`).click();
  const rotated = (await page.locator("#secret-value").innerText()).trim();
  out.rotated_differs = rotated !== secret;
  out.rotated_status = await chatUntil(rotated, 200);
  out.old_in_grace_status = await chat(secret);
  page.once("dialog", (d) => d.accept());
  await page.locator(`button[data-action="revoke"][data-key="${out.created}"]`).click();
  await page.locator("#status").filter({ hasText: "Revoked" }).waitFor();
  out.revoked_status = await chatUntil(rotated, 401);

  // Every page renders, at 1280 px and at phone width.
  for (const name of ["teams", "users", "orgs", "customers", "models", "audit"]) await visit(page, name);
  out.audit_has_revoke = (await page.locator("main").innerText()).includes("key.revoke");
  await page.setViewportSize({ width: 390, height: 844 });
  for (const name of ["keys", "spend", "requests"]) await visit(page, name, null, "phone");
  out.phone_overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);

  // Keyboard: a page takes the focus, Tab reaches its first control and Enter
  // opens it; a navigation link is followed with Enter.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(consoleURL + "#/keys");
  await page.locator('main[data-page="keys"]').waitFor();
  await page.keyboard.press("Tab");
  out.first_tab = await page.evaluate(() => document.activeElement.textContent.trim());
  await page.keyboard.press("Enter");
  out.opened_by_keyboard = await page.locator("details").first().evaluate((d) => d.open);
  await page.locator('nav a[href="#/teams"]').focus();
  await page.keyboard.press("Enter");
  await page.locator('main[data-page="teams"]').waitFor();
  out.keyboard_nav = await page.evaluate(() => location.hash);

  // A REST call with the cookie but without the CSRF token is refused.
  out.no_csrf_status = await page.evaluate(async () =>
    (await fetch("/tollgate.admin.v1.KeyService/ListKeys", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).status);
  await ctx.close();

  // A viewer sees the keys but no create form, and the server refuses its writes.
  const vctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const vpage = await vctx.newPage();
  await signIn(vpage, env("VIEWER_KEY"));
  await visit(vpage, "keys", null, "viewer");
  out.viewer_sees_key = (await vpage.locator("main").innerText()).includes(out.created);
  out.viewer_create_forms = await vpage.getByText("Create a key").count();
  out.viewer_write = await vpage.evaluate(async () => {
    const s = await (await fetch("/ui/api/session")).json();
    const r = await fetch("/tollgate.admin.v1.KeyService/CreateKey", {
      method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": s.csrf }, body: JSON.stringify({ alias: "nope" }),
    });
    return { status: r.status, body: await r.json() };
  });
  await vctx.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
