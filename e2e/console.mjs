// The web console driven in Debian's Chromium (headless) with playwright-core,
// against a running Tollgate. Usage: node console.mjs; env CONSOLE_URL (the
// admin port's /ui/), TOLLGATE_URL (data plane), ADMIN_KEY, VIEWER_KEY,
// CHROMIUM (browser binary), SHOTS (screenshot directory), MOCK_URL (the mock
// provider), DEAD_URL (an address nothing listens on).
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

async function chat(secret, model = "demo", headers = {}) {
  const r = await fetch(dataURL + "/v1/chat/completions", {
    method: "POST",
    headers: { Authorization: "Bearer " + secret, "Content-Type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Hello from the console test" }] }),
  });
  await r.arrayBuffer();
  return r.status;
}

// chatUntil retries while the new key propagates to the data plane (bounded).
async function chatUntil(secret, want, model = "demo") {
  let got;
  for (let i = 0; i < 100; i++) {
    got = await chat(secret, model);
    if (got === want) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

// mcpCall calls the demo MCP server's echo tool through /mcp (a
// 2025-11-25 request without a session, as `make run` prints it).
async function mcpCall(secret) {
  const r = await fetch(dataURL + "/mcp", {
    method: "POST",
    headers: { Authorization: "Bearer " + secret, "Content-Type": "application/json",
      Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "demo__echo", arguments: { text: "console" } } }),
  });
  await r.arrayBuffer();
  return r.status;
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
  // make test runs other packages' tests beside this one on two cores: a
  // page's action may wait past Playwright's 30 s default there.
  page.setDefaultTimeout(90000);
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

  // Edit and delete: a user created, its email edited, added to the team and
  // removed again, then deleted (a dismissed confirmation deletes nothing).
  await visit(page, "users");
  const userForm = page.locator("details", { hasText: "Create user" });
  await userForm.locator("summary").click();
  await userForm.getByLabel("ID").fill("alice");
  await userForm.getByRole("button", { name: "Create" }).click();
  await page.locator('button[data-action="edit"][data-id="alice"]').click();
  const editForm = page.locator("section.edit");
  await editForm.getByLabel("Email").fill("alice@example.com");
  await editForm.getByLabel("Budget ($)").fill("7");
  await editForm.getByRole("button", { name: "Save" }).click();
  await page.locator("tbody tr", { hasText: "alice@example.com" }).waitFor();
  out.user_row = await page.locator("tbody tr", { hasText: "alice" }).innerText();
  await page.goto(consoleURL + "#/teams");
  await page.locator('main[data-page="teams"]').waitFor();
  const memberForm = page.locator("details", { hasText: "Add a member" });
  await memberForm.locator("summary").click();
  await memberForm.getByLabel("Team").fill("platform");
  await memberForm.getByLabel("User").fill("alice");
  await memberForm.getByRole("button", { name: "Add" }).click();
  await page.locator('button[data-remove-member="platform/alice"]').waitFor();
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-remove-member="platform/alice"]').click();
  await page.locator("#status").filter({ hasText: "Removed alice" }).waitFor();
  // The status line comes before the table's refresh: wait for the row to go.
  out.member_removed = await page.locator('button[data-remove-member="platform/alice"]')
    .waitFor({ state: "detached", timeout: 10000 }).then(() => true, () => false);
  await page.goto(consoleURL + "#/users");
  await page.locator('main[data-page="users"]').waitFor();
  page.once("dialog", (d) => { out.delete_confirm = d.message(); d.dismiss(); });
  await page.locator('button[data-action="delete"][data-id="alice"]').click();
  out.kept_after_dismiss = await page.locator('button[data-action="delete"][data-id="alice"]').count();
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-action="delete"][data-id="alice"]').click();
  await page.locator("#status").filter({ hasText: "Deleted user alice" }).waitFor();
  out.user_deleted = await page.locator('button[data-action="delete"][data-id="alice"]')
    .waitFor({ state: "detached", timeout: 10000 }).then(() => true, () => false);

  // Models: the demo deployment's health; a provider (its credential entered
  // once, never shown back), deployments and models created in the console.
  await visit(page, "models");
  out.health_before = await page.locator("[data-deployments]").getAttribute("data-deployments");
  async function create(what, id, fill) {
    const f = page.locator("details", { hasText: "Create " + what });
    await f.locator("summary").click();
    await fill(f);
    await f.getByRole("button", { name: "Create" }).click();
    await page.locator("#status").filter({ hasText: `Created ${what} ${id}` }).waitFor();
    await page.locator(`button[data-action="delete"][data-id="${id}"]`).waitFor();
  }
  for (const [id, url] of [["console-mock", env("MOCK_URL") + "/v1"], ["dead", env("DEAD_URL") + "/v1"]]) {
    await create("provider", id, async (f) => {
      await f.getByLabel("ID", { exact: true }).fill(id);
      await f.getByLabel("Type").selectOption("PROVIDER_TYPE_OPENAI");
      await f.getByLabel("Base URL").fill(url);
      await f.getByLabel("Credential (API key)").fill("sk-console-secret-" + id);
    });
  }
  out.credential_shown = (await page.content()).includes("sk-console-secret");
  out.provider_row = await page.locator("tbody tr", { hasText: "console-mock" }).first().innerText();
  // The mock's model has no price: declared free, the two deployments are
  // served under the key's strict budget; a third, left unpriced, is warned
  // about when created and listed as missing a price.
  for (const [id, prov, free] of [["console-d", "console-mock", true], ["dead-d", "dead", true], ["unpriced-d", "console-mock", false]]) {
    await create("deployment", id, async (f) => {
      await f.getByLabel("ID", { exact: true }).fill(id);
      await f.locator('select[name="provider"]').selectOption(prov);
      await f.getByLabel("Provider model").fill("mock-gpt");
      if (free) await f.getByLabel("Free").check();
    });
    if (!free) out.unpriced_warning = await page.locator("#status").innerText();
  }
  out.unpriced_listed = await page.locator('[data-unpriced="unpriced-d"]').count();
  out.missing_section = await page.locator("#missing-prices").innerText();
  for (const [id, dep] of [["console-model", "console-d"], ["broken", "dead-d"]]) {
    await create("model", id, async (f) => {
      await f.getByLabel("Public name").fill(id);
      await f.getByLabel("Deployments (comma-separated)").fill(dep);
    });
  }
  await page.screenshot({ path: `${shots}/models-created.png`, fullPage: true });

  // Create a key with a budget, rpm, models and expiry; read its secret once.
  await visit(page, "keys");
  await page.getByText("Create a key").click();
  const form = page.locator("details", { hasText: "Create a key" });
  await form.getByLabel("Alias").fill("console-e2e");
  await form.getByLabel("Team").selectOption("platform");
  await form.getByLabel("Budget ($)").fill("5");
  await form.getByLabel("Requests/min").fill("100");
  await form.getByLabel("Models (comma-separated)").fill("demo, console-model, broken");
  await form.getByLabel("Expires").fill("2099-01-01");
  await form.getByRole("button", { name: "Create", exact: true }).click();
  const secret = (await page.locator("#secret-value").innerText()).trim();
  out.secret_prefix = secret.slice(0, 3);
  out.created = (await page.locator("#status").innerText()).replace(/^Created |\.$/g, "");
  await page.screenshot({ path: `${shots}/keys-secret.png`, fullPage: true });
  await page.getByRole("button", { name: "Copy" }).click();

  // The secret works against the data plane, on the demo model and on the
  // model made in the console.
  out.chat_status = await chatUntil(secret, 200);
  out.console_model_status = await chatUntil(secret, 200, "console-model");
  // One call of a run, tagged: the Runs and Tags pages list them.
  out.mcp_call_status = await mcpCall(env("DEMO_KEY")); // spend on the MCP page
  out.run_status = await chat(secret, "demo", { "x-tollgate-run-id": "console-run", "x-tollgate-tags": "feature=console" });

  // The model whose provider is down fails, and its deployment cools down: the
  // models page says until when (bounded: a few requests, a few reloads).
  for (let i = 0; i < 30 && !(out.health_after || "").includes("dead-d=cooling_down"); i++) {
    out.broken_status = await chat(secret, "broken");
    await page.goto(consoleURL + "#/models");
    await page.reload();
    await page.locator('main[data-page="models"]').waitFor();
    out.health_after = await page.locator("[data-deployments]").getAttribute("data-deployments");
  }
  out.cooling_cell = await page.locator("tbody tr", { has: page.locator('button[data-action="delete"][data-id="dead-d"]') }).innerText();
  await page.screenshot({ path: `${shots}/models-health.png`, fullPage: true });
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-action="delete"][data-id="broken"]').click();
  await page.locator("#status").filter({ hasText: "Deleted model broken" }).waitFor();
  out.model_deleted = await page.locator('button[data-action="delete"][data-id="broken"]')
    .waitFor({ state: "detached", timeout: 10000 }).then(() => true, () => false);

  // The request shows in the requests page, with its detail.
  await visit(page, "requests", async () => {
    await page.getByLabel("Key").fill(out.created);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator(`tbody tr`).filter({ hasText: out.created }).first().waitFor();
  });
  out.request_rows = await page.locator("tbody tr").filter({ hasText: out.created }).count();
  await page.locator("tbody tr").filter({ hasText: "completed" }).first().getByRole("button", { name: "Details" }).click();
  out.request_detail = await page.locator("#request-detail").innerText();
  await page.screenshot({ path: `${shots}/requests-detail.png`, fullPage: true });

  // And in the spend chart, stacked by key.
  await visit(page, "spend", async () => {
    await page.getByLabel("Stack by").selectOption("key");
    await page.locator(".charts[data-series]").filter({ hasText: "" }).waitFor();
    await page.waitForFunction((id) => (document.querySelector(".charts").dataset.series || "").includes(id), out.created);
  });
  out.spend_series = await page.evaluate(() => document.querySelector(".charts").dataset.series.split("\n"));
  out.spend_timing = await page.evaluate(() => document.querySelector(".charts").dataset.timing);
  // Cold loads of the spend page (a reload: the document, the scripts, every
  // call and both charts), reported, not asserted.
  out.spend_cold_ms = [];
  for (let i = 0; i < 5; i++) {
    const t0 = Date.now();
    await page.reload();
    await page.locator('main[data-page="spend"]').waitFor();
    out.spend_cold_ms.push(Date.now() - t0);
  }
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
  for (const name of ["teams", "users", "orgs", "customers", "models", "audit", "cache"]) await visit(page, name);
  out.cache_page = await page.locator("main").innerText();
  await visit(page, "audit");
  out.audit_has_revoke = (await page.locator("main").innerText()).includes("key.revoke");

  // Alerts: a sink added through the form is listed (its secret never
  // shown), then deleted; the Runs and Tags pages list the run and tag of
  // the call above (issue 36).
  await visit(page, "alerts");
  await page.getByText("Add an alert sink").click();
  const aform = page.locator("details", { hasText: "Add an alert sink" });
  await aform.getByLabel("Name").fill("console-hook");
  await aform.getByLabel("URL").fill(env("DEAD_URL") + "/hook");
  await aform.getByLabel("Secret (webhook)").fill("console-hook-secret");
  await aform.getByRole("button", { name: "Add" }).click();
  await page.locator("#status").filter({ hasText: "Added alert sink console-hook" }).waitFor();
  await page.locator("tbody tr", { hasText: "console-hook" }).waitFor();
  out.alert_sink_row = (await page.locator("tbody tr", { hasText: "console-hook" }).innerText()).replace(/\s+/g, " ").trim();
  out.alerts_page = await page.locator("main").innerText();
  out.alert_secret_shown = (await page.content()).includes("console-hook-secret");
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-action="delete"][data-id="console-hook"]').click();
  await page.locator("#status").filter({ hasText: "Deleted alert sink console-hook" }).waitFor();
  await visit(page, "runs", () => page.locator("tbody tr", { hasText: "console-run" }).first().waitFor());
  out.runs_page = await page.locator("main").innerText();
  await visit(page, "tags", () => page.locator("tbody tr", { hasText: "feature=console" }).first().waitFor());
  out.tags_page = await page.locator("main").innerText();

  // Guardrails: one created through the form is listed, then deleted.
  await visit(page, "guardrails");
  await page.getByText("Create guardrail").click();
  const gform = page.locator('form:has(input[name="name"])');
  await gform.locator('input[name="name"]').fill("console-pii");
  await gform.locator('select[name="kind"]').selectOption("pii");
  await gform.locator('select[name="action"]').selectOption("redact");
  await gform.locator('input[name="on"]').fill("pre, post");
  await gform.locator('button[type="submit"]').click();
  await page.locator("#status").filter({ hasText: "Created guardrail console-pii" }).waitFor();
  out.guardrail_row = (await page.locator("tr", { hasText: "console-pii" }).innerText()).replace(/\s+/g, " ").trim();
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-action="delete"][data-id="console-pii"]').click();
  await page.locator("#status").filter({ hasText: "Deleted guardrail console-pii" }).waitFor();
  out.guardrail_rows_after_delete = await page.locator("tr", { hasText: "console-pii" }).count();
  // MCP servers (issue 31): one added through the form is listed with its
  // prices and rpm, never its credential; the spend tables render; then it
  // is deleted.
  for (let i = 0; i < 20; i++) { // until the call above is in the ledger
    await visit(page, "mcp", () => page.locator('main[data-mcp-drawn="yes"]').waitFor());
    if (await page.locator("#mcp-spend-tools tbody tr", { hasText: "demo/echo" }).count()) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  out.mcp_spend_servers = (await page.locator("#mcp-spend-servers").innerText()).replace(/\s+/g, " ").trim();
  out.mcp_spend_tools = (await page.locator("#mcp-spend-tools").innerText()).replace(/\s+/g, " ").trim();
  await page.getByText("Add an MCP server").click();
  const mform = page.locator("details", { hasText: "Add an MCP server" });
  await mform.locator('input[name="id"]').fill("console-mcp");
  await mform.locator('input[name="url"]').fill(env("DEAD_URL") + "/mcp");
  await mform.locator('input[name="credential"]').fill("console-mcp-secret");
  await mform.locator('input[name="price"]').fill("0.002");
  await mform.locator('input[name="tool_prices"]').fill("create_issue=0.01");
  await mform.locator('input[name="rpm"]').fill("600");
  await mform.locator('button[type="submit"]').click();
  await page.locator("#status").filter({ hasText: "Added MCP server console-mcp" }).waitFor();
  await page.locator("tbody tr", { hasText: "console-mcp" }).waitFor();
  out.mcp_row = (await page.locator("tbody tr", { hasText: "console-mcp" }).innerText()).replace(/\s+/g, " ").trim();
  out.mcp_page = await page.locator("main").innerText();
  out.mcp_credential_shown = (await page.content()).includes("console-mcp-secret");
  page.once("dialog", (d) => d.accept());
  await page.locator('button[data-action="delete"][data-id="console-mcp"]').click();
  await page.locator("#status").filter({ hasText: "Deleted MCP server console-mcp" }).waitFor();
  out.mcp_rows_after_delete = await page.locator("tbody tr", { hasText: "console-mcp" }).count();
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
