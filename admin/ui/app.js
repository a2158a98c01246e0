// The Tollgate console: plain ES module, no build. Every call goes to the REST
// admin API (POST /tollgate.admin.v1.<Service>/<Method>) with the session
// cookie and its CSRF token; the server runs it as the signed-in admin
// credential, so its role decides what works.

const S = { csrf: '', cred: null, charts: [] };
const main = document.getElementById('main');
const statusEl = document.getElementById('status');

// ---- helpers -------------------------------------------------------------

// h builds an element; children are nodes or text (never parsed as HTML).
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function say(msg, isError = false) {
  statusEl.textContent = msg;
  statusEl.className = isError ? 'error' : '';
}

// sayWarned reports a write and the server's warnings about it (e.g. a
// deployment whose model has no price), styled as a warning when there are any.
function sayWarned(msg, warnings) {
  if (!warnings || warnings.length === 0) { say(msg); return; }
  statusEl.textContent = msg + ' Warning: ' + warnings.join(' ');
  statusEl.className = 'warning';
}

class APIError extends Error {
  constructor(status, body) {
    super(body.message || `HTTP ${status}`);
    this.status = status;
    this.code = body.code;
  }
}

async function api(method, body = {}) {
  const r = await fetch('/tollgate.admin.v1.' + method, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': S.csrf },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    if (r.status === 401) { showSignIn('Your session ended: sign in again.'); }
    throw new APIError(r.status, data);
  }
  return data;
}

// listAll follows next_page_token (bounded).
async function listAll(method, field, req = {}, maxPages = 20) {
  let out = [], token = '';
  for (let i = 0; i < maxPages; i++) {
    const r = await api(method, { ...req, page_size: 1000, page_token: token });
    out = out.concat(r[field] || []);
    token = r.next_page_token;
    if (!token) break;
  }
  return out;
}

const role = () => (S.cred ? S.cred.role : '');
const canWrite = () => role() === 'ADMIN_ROLE_ADMIN' || role() === 'ADMIN_ROLE_TEAM_ADMIN';
const isAdmin = () => role() === 'ADMIN_ROLE_ADMIN';
const roleName = (r) => ({ ADMIN_ROLE_ADMIN: 'admin', ADMIN_ROLE_TEAM_ADMIN: 'team admin', ADMIN_ROLE_VIEWER: 'viewer' }[r] || r);

const usd = (m) => (m && m.dollars ? '$' + Number(m.dollars).toFixed(Number(m.dollars) < 1 && Number(m.dollars) > 0 ? 6 : 2) : '$0.00');
const dollars = (m) => (m && m.dollars ? Number(m.dollars) : 0);
const when = (t) => (t ? new Date(t).toISOString().replace('T', ' ').slice(0, 19) + 'Z' : '');
const period = (p) => (p || '').replace('PERIOD_KIND_', '').toLowerCase();
const enumTail = (v, prefix) => (v || '').replace(prefix, '').toLowerCase();
function budgets(l) {
  return ((l && l.budgets) || []).map((b) => usd(b.limit) + '/' + period(b.period)).join(', ');
}

function table(columns, rows, empty = 'Nothing yet.') {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('div', { class: 'table', tabindex: '0', role: 'region', 'aria-label': 'table' },
    h('table', {},
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: c.num ? 'num' : '' }, c.get(r))))))));
}

function field(label, input) { return h('label', {}, label, input); }
function inp(name, attrs = {}) { return h('input', { name, ...attrs }); }
function sel(name, options, attrs = {}) {
  return h('select', { name, ...attrs }, options.map(([v, t]) => h('option', { value: v }, t)));
}
function periodSelect(name = 'period') {
  return sel(name, [['PERIOD_KIND_MONTHLY', 'monthly'], ['PERIOD_KIND_WEEKLY', 'weekly'], ['PERIOD_KIND_DAILY', 'daily'], ['PERIOD_KIND_TOTAL', 'total']]);
}

// limitsFrom reads the budget/rpm/tpm/models/expiry inputs of a form.
function limitsFrom(f) {
  const l = {};
  const v = (n) => (f.elements[n] ? f.elements[n].value.trim() : '');
  if (v('budget')) l.budgets = [{ limit: { dollars: v('budget') }, period: v('period') }];
  if (v('rpm')) l.rpm = v('rpm');
  if (v('tpm')) l.tpm = v('tpm');
  if (v('models')) l.models = v('models').split(',').map((s) => s.trim()).filter(Boolean);
  if (v('expires')) l.expires_at = new Date(v('expires') + 'T23:59:59Z').toISOString();
  return l;
}
// limitInputs are the limit fields of a form, prefilled from limits l (its
// first budget) when editing.
function limitInputs(withExpiry, l = {}) {
  const b = (l.budgets || [])[0] || {};
  const n = (v) => (v && v !== '0' ? v : undefined);
  const period = periodSelect();
  if (b.period) period.value = b.period;
  return [
    field('Budget ($)', inp('budget', { inputmode: 'decimal', placeholder: '10.00', size: 8, value: b.limit && b.limit.dollars })),
    field('Period', period),
    field('Requests/min', inp('rpm', { type: 'number', min: 0, size: 6, value: n(l.rpm) })),
    field('Tokens/min', inp('tpm', { type: 'number', min: 0, size: 8, value: n(l.tpm) })),
    field('Models (comma-separated)', inp('models', { placeholder: 'all', value: (l.models || []).join(', ') || undefined })),
    withExpiry && field('Expires', inp('expires', { type: 'date' })),
  ];
}

// editedLimits is limits l with the form's budget (replacing the first one,
// the others kept), rpm, tpm and models, and the update_mask paths they are.
function editedLimits(f, l = {}) {
  const got = limitsFrom(f);
  const rest = (l.budgets || []).slice(1);
  return {
    limits: { budgets: [...(got.budgets || []), ...rest], rpm: got.rpm || '0', tpm: got.tpm || '0', models: got.models || [] },
    paths: ['limits.budgets', 'limits.rpm', 'limits.tpm', 'limits.models'],
  };
}

// writeForm is a create form shown to roles that may write.
function writeForm(title, inputs, onSubmit, submitLabel = 'Create', allowed = canWrite()) {
  if (!allowed) return h('p', { class: 'muted' }, `Your role (${roleName(role())}) can view but not change this page.`);
  const f = h('form', { class: 'bar' }, inputs, h('button', { class: 'primary', type: 'submit' }, submitLabel));
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await onSubmit(f);
      f.reset();
    } catch (err) { say(err.message, true); }
  });
  return h('details', {}, h('summary', {}, title), f);
}

function secretPanel(title, secret) {
  const code = h('code', { id: 'secret-value' }, secret);
  const copy = h('button', { type: 'button', id: 'copy-secret', onclick: async () => {
    try { await navigator.clipboard.writeText(secret); copy.textContent = 'Copied'; } catch {
      const r = document.createRange(); r.selectNodeContents(code);
      getSelection().removeAllRanges(); getSelection().addRange(r); copy.textContent = 'Selected: press Ctrl-C';
    }
  } }, 'Copy');
  return h('section', { class: 'secret', 'aria-label': 'New secret' }, h('strong', {}, title),
    h('p', { class: 'muted' }, 'Shown once: copy it now, only its hash is stored.'), code, copy,
    h('button', { type: 'button', onclick: (e) => e.target.closest('section').remove() }, 'Done'));
}

// ---- pages ---------------------------------------------------------------

const pages = {};

pages.keys = async () => {
  // A team admin may not list teams: it works on its own team.
  const teams = S.cred.team_id ? [{ id: S.cred.team_id }]
    : await api('TeamService/ListTeams', { page_size: 1000 }).then((r) => r.teams || []).catch(() => []);
  const teamOpts = [['', 'all teams'], ...teams.map((t) => [t.id, t.id])];
  const filters = h('form', { class: 'filters', role: 'search' },
    field('Search', inp('q', { type: 'search', placeholder: 'id, alias or prefix' })),
    field('Team', sel('team', teamOpts)),
    field('Status', sel('status', [['', 'any'], ['KEY_STATUS_ACTIVE', 'active'], ['KEY_STATUS_REVOKED', 'revoked'], ['KEY_STATUS_EXPIRED', 'expired']])));
  const list = h('div', {});
  const secretSlot = h('div', {});
  async function refresh() {
    const fe = filters.elements;
    const keys = await listAll('KeyService/ListKeys', 'keys', { team_id: fe.team.value, status: fe.status.value || undefined });
    const q = fe.q.value.trim().toLowerCase();
    const shown = keys.filter((k) => !q || [k.id, k.alias, k.prefix].some((s) => (s || '').toLowerCase().includes(q)));
    list.replaceChildren(table([
      { label: 'ID', get: (k) => k.id },
      { label: 'Actions', get: (k) => (canWrite() && k.status === 'KEY_STATUS_ACTIVE' ? h('span', {},
        h('button', { type: 'button', 'data-action': 'rotate', 'data-key': k.id, onclick: () => rotate(k) }, 'Rotate'), ' ',
        h('button', { type: 'button', class: 'danger', 'data-action': 'revoke', 'data-key': k.id, onclick: () => revoke(k) }, 'Revoke')) : '') },
      { label: 'Alias', get: (k) => k.alias },
      { label: 'Prefix', get: (k) => h('code', {}, k.prefix) },
      { label: 'Team', get: (k) => k.team_id },
      { label: 'User', get: (k) => k.user_id },
      { label: 'Status', get: (k) => h('span', { class: 'pill ' + enumTail(k.status, 'KEY_STATUS_') }, enumTail(k.status, 'KEY_STATUS_')) },
      { label: 'Budgets', get: (k) => budgets(k.limits) },
      { label: 'RPM', num: true, get: (k) => (k.limits && k.limits.rpm !== '0' ? k.limits.rpm : '') },
      { label: 'Models', get: (k) => ((k.limits && k.limits.models) || []).join(', ') || 'all' },
      { label: 'Expires', get: (k) => when(k.limits && k.limits.expires_at) },
      { label: 'Old secret valid until', get: (k) => when(k.previous_secret_valid_until) },
    ], shown, 'No key matches.'));
  }
  async function rotate(k) {
    const grace = prompt(`Rotate ${k.id}: hours the old secret keeps working`, '24');
    if (grace === null) return;
    try {
      const r = await api('KeyService/RotateKey', { id: k.id, grace_period: Math.round(Number(grace) * 3600) + 's' });
      secretSlot.replaceChildren(secretPanel(`New secret of ${k.id}`, r.secret));
      say(`Rotated ${k.id}; the old secret works until ${when(r.key.previous_secret_valid_until) || 'now'}.`);
      await refresh();
    } catch (err) { say(err.message, true); }
  }
  async function revoke(k) {
    if (!confirm(`Revoke ${k.id}${k.alias ? ' (' + k.alias + ')' : ''}? Its secret stops working at once.`)) return;
    try {
      await api('KeyService/RevokeKey', { id: k.id });
      say(`Revoked ${k.id}.`);
      await refresh();
    } catch (err) { say(err.message, true); }
  }
  filters.addEventListener('input', () => refresh().catch((e) => say(e.message, true)));
  filters.addEventListener('submit', (e) => e.preventDefault());
  const create = writeForm('Create a key', [
    field('Alias', inp('alias', { placeholder: 'ci' })),
    field('Team', sel('team_id', [...(S.cred.team_id ? [] : [['', 'none']]), ...teams.map((t) => [t.id, t.id])])),
    field('User', inp('user_id', { size: 10 })),
    ...limitInputs(true),
  ], async (f) => {
    const e = f.elements;
    const r = await api('KeyService/CreateKey', { alias: e.alias.value.trim(), team_id: e.team_id.value, user_id: e.user_id.value.trim(), limits: limitsFrom(f) });
    secretSlot.replaceChildren(secretPanel(`Secret of ${r.key.id}`, r.secret));
    say(`Created ${r.key.id}.`);
    await refresh();
  });
  const change = canWrite() ? writeForm('Set a key\'s budget and limits', [field('Key ID', inp('id', { required: true, size: 14 })), ...limitInputs(true)], async (f) => {
    await api('KeyService/UpdateKey', { id: f.elements.id.value.trim(), limits: limitsFrom(f), update_mask: 'limits' });
    say(`Set the limits of ${f.elements.id.value.trim()}.`);
    await refresh();
  }, 'Save') : '';
  main.replaceChildren(h('h1', {}, 'Keys'), create, change, secretSlot, filters, list);
  await refresh();
};

// entityPage is the page of one principal kind: a table with edit and delete
// actions, a create form and a budget form. fields are the kind's own fields
// besides id and limits: [name, label, attrs].
function entityPage(title, service, kind, plural, columns, fields, extra) {
  const lower = kind.toLowerCase();
  const own = (f) => Object.fromEntries(fields.map(([n]) => [n, f.elements[n].value.trim()]));
  return async () => {
    const list = h('div', {});
    const editSlot = h('div', {});
    let refresh;
    async function remove(x) {
      if (!confirm(`Delete ${lower} ${x.id}? Keys that name it keep working but are no longer charged to it.`)) return;
      try {
        await api(`${service}/Delete${kind}`, { id: x.id });
        say(`Deleted ${lower} ${x.id}.`);
        editSlot.replaceChildren();
        await refresh();
      } catch (err) { say(err.message, true); }
    }
    function edit(x) {
      const f = h('form', { class: 'bar', 'aria-label': `Edit ${lower} ${x.id}` },
        fields.map(([n, label, attrs]) => field(label, inp(n, { ...attrs, value: x[n] || undefined }))),
        ...limitInputs(false, x.limits || {}),
        h('button', { class: 'primary', type: 'submit' }, 'Save'),
        h('button', { type: 'button', onclick: () => editSlot.replaceChildren() }, 'Cancel'));
      f.addEventListener('submit', async (e) => {
        e.preventDefault();
        const { limits, paths } = editedLimits(f, x.limits);
        // A FieldMask in JSON names its paths in lowerCamelCase (org_id → orgId).
        const body = { update_mask: [...fields.map(([n]) => n), ...paths].map((p) => p.replace(/_([a-z])/g, (_, c) => c.toUpperCase())).join(',') };
        body[lower] = { id: x.id, ...own(f), limits };
        try {
          await api(`${service}/Update${kind}`, body);
          say(`Saved ${lower} ${x.id}.`);
          editSlot.replaceChildren();
          await refresh();
        } catch (err) { say(err.message, true); }
      });
      editSlot.replaceChildren(h('section', { class: 'edit', 'aria-label': `Edit ${x.id}` }, h('h2', {}, `Edit ${lower} ${x.id}`), f));
      f.querySelector('input').focus();
    }
    const actions = { label: 'Actions', get: (x) => (isAdmin() ? h('span', { class: 'actions' },
      h('button', { type: 'button', 'data-action': 'edit', 'data-id': x.id, onclick: () => edit(x) }, 'Edit'), ' ',
      h('button', { type: 'button', class: 'danger', 'data-action': 'delete', 'data-id': x.id, onclick: () => remove(x) }, 'Delete')) : '') };
    refresh = async () => {
      const items = await listAll(`${service}/List${plural}`, plural.toLowerCase());
      list.replaceChildren(table([columns[0], actions, ...columns.slice(1).map((c) => (c.live ? { ...c, get: (x) => c.get(x, refresh) } : c))], items));
    };
    const create = writeForm(`Create ${lower}`, [
      field('ID', inp('id', { required: true, size: 12 })),
      fields.map(([n, label, attrs]) => field(label, inp(n, attrs))),
      ...limitInputs(false),
    ], async (f) => {
      const body = {};
      body[lower] = { id: f.elements.id.value.trim(), ...own(f), limits: limitsFrom(f) };
      await api(`${service}/Create${kind}`, body);
      say(`Created ${lower} ${body[lower].id}.`);
      await refresh();
    }, 'Create', isAdmin());
    const change = writeForm('Set budget and limits', [field(kind, inp('id', { required: true, size: 12 })), ...limitInputs(false)], async (f) => {
      const body = { update_mask: 'limits' };
      body[lower] = { id: f.elements.id.value.trim(), limits: limitsFrom(f) };
      await api(`${service}/Update${kind}`, body);
      say(`Set the limits of ${lower} ${body[lower].id}.`);
      await refresh();
    }, 'Save', isAdmin());
    main.replaceChildren(h('h1', {}, title), create, isAdmin() ? change : '', extra ? extra(() => refresh()) : '', editSlot, list);
    await refresh();
  };
}

const idCol = { label: 'ID', get: (x) => x.id };
const nameCol = { label: 'Name', get: (x) => x.name };
const budgetCol = { label: 'Budgets', get: (x) => budgets(x.limits) };
const rpmCol = { label: 'RPM', num: true, get: (x) => (x.limits && x.limits.rpm !== '0' ? x.limits.rpm : '') };
const nameField = ['name', 'Name', {}];
const orgField = ['org_id', 'Org', { size: 10 }];

// membersCol lists a team's members, each with a remove button (team admins
// and admins).
const membersCol = { label: 'Members', live: true, get: (t, refresh) => h('span', { class: 'members' }, (t.members || []).map((u) => h('span', { class: 'member' }, u,
  canWrite() ? h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${u} from ${t.id}`, 'data-remove-member': `${t.id}/${u}`, onclick: async () => {
    if (!confirm(`Remove ${u} from team ${t.id}?`)) return;
    try {
      await api('TeamService/RemoveTeamMember', { team_id: t.id, user_id: u });
      say(`Removed ${u} from ${t.id}.`);
      await refresh();
    } catch (err) { say(err.message, true); }
  } }, '×') : ''))) };

pages.teams = entityPage('Teams', 'TeamService', 'Team', 'Teams',
  [idCol, nameCol, { label: 'Org', get: (t) => t.org_id }, membersCol, budgetCol, rpmCol],
  [nameField, orgField],
  (refresh) => writeForm('Add a member', [field('Team', inp('team_id', { required: true, size: 10 })), field('User', inp('user_id', { required: true, size: 10 }))],
    async (f) => {
      await api('TeamService/AddTeamMember', { team_id: f.elements.team_id.value.trim(), user_id: f.elements.user_id.value.trim() });
      say(`Added ${f.elements.user_id.value} to ${f.elements.team_id.value}.`);
      await refresh();
    }, 'Add'));
pages.users = entityPage('Users', 'UserService', 'User', 'Users',
  [idCol, { label: 'Email', get: (u) => u.email }, { label: 'Org', get: (u) => u.org_id }, { label: 'Teams', get: (u) => (u.teams || []).join(', ') }, budgetCol, rpmCol],
  [['email', 'Email', { type: 'email' }], orgField]);
pages.orgs = entityPage('Organizations', 'OrgService', 'Org', 'Orgs', [idCol, nameCol, budgetCol, rpmCol], [nameField]);
pages.customers = entityPage('Customers', 'CustomerService', 'Customer', 'Customers', [idCol, nameCol, budgetCol, rpmCol], [nameField]);

// health shows a deployment's routing state: healthy, or cooling down until
// when the router probes it again; unknown when the admin server runs without
// a router beside it.
function health(d) {
  const st = d.state;
  if (!st) return h('span', { class: 'pill' }, 'unknown');
  if (st.health === 'cooling_down') {
    return h('span', { class: 'pill cooling', title: 'out of rotation until the cooldown ends' }, 'cooling down until ' + when(st.cooldown_until).slice(11));
  }
  return h('span', { class: 'pill ' + st.health }, st.health);
}
const pct = (x) => (x === undefined || x === null ? '' : (Number(x) * 100).toFixed(1) + '%');
const ms = (d) => (d ? Math.round(parseFloat(d) * 1000) + ' ms' : '');
const csv = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);

// deleteButton asks for confirmation, then calls method with {id}.
function deleteButton(what, id, method, refresh) {
  if (!isAdmin()) return '';
  return h('button', { type: 'button', class: 'danger', 'data-action': 'delete', 'data-id': id, onclick: async () => {
    if (!confirm(`Delete ${what} ${id}?`)) return;
    try {
      await api(method, { id });
      say(`Deleted ${what} ${id}.`);
      await refresh();
    } catch (err) { say(err.message, true); }
  } }, 'Delete');
}

const PROVIDER_TYPES = ['OPENAI', 'AZURE', 'ANTHROPIC', 'GEMINI', 'BEDROCK', 'VERTEX'].map((t) => ['PROVIDER_TYPE_' + t, t.toLowerCase()]);
const ROUTINGS = [['', 'weighted (default)'], ['least-busy', 'least busy'], ['latency', 'lowest latency'], ['usage', 'lowest usage']];

pages.models = async () => {
  const lists = h('div', {});
  const forms = h('div', {});
  async function refresh() {
    const [models, deps, provs, missing] = await Promise.all([
      listAll('ModelService/ListModels', 'models'),
      listAll('DeploymentService/ListDeployments', 'deployments').catch(() => []),
      listAll('ProviderService/ListProviders', 'providers').catch(() => []),
      api('PriceService/ListMissingPrices', {}).then((r) => r.missing || []).catch(() => []),
    ]);
    const unpriced = new Set(missing.map((m) => m.deployment));
    lists.replaceChildren(
      h('h2', {}, 'Models'),
      table([idCol, { label: 'Actions', get: (m) => deleteButton('model', m.id, 'ModelService/DeleteModel', refresh) },
        { label: 'Deployments', get: (m) => (m.deployments || []).join(', ') },
        { label: 'Routing', get: (m) => m.routing || 'weighted' },
        { label: 'Fallbacks', get: (m) => (m.fallbacks || []).join(' → ') },
        { label: 'Aliases', get: (m) => (m.aliases || []).join(', ') },
        { label: 'Default max tokens', num: true, get: (m) => (m.default_max_tokens !== '0' ? m.default_max_tokens : '') }], models),
      h('h2', {}, 'Deployments'),
      table([idCol, { label: 'Actions', get: (d) => deleteButton('deployment', d.id, 'DeploymentService/DeleteDeployment', refresh) },
        { label: 'Health', get: health },
        { label: 'Error rate', num: true, get: (d) => pct(d.state && d.state.error_rate) },
        { label: 'Latency', num: true, get: (d) => ms(d.state && d.state.latency) },
        { label: 'In flight', num: true, get: (d) => (d.state ? d.state.in_flight || '0' : '') },
        { label: 'Provider', get: (d) => d.provider }, { label: 'Provider model', get: (d) => d.provider_model },
        { label: 'Weight', num: true, get: (d) => d.weight }, { label: 'RPM', num: true, get: (d) => d.rpm }, { label: 'TPM', num: true, get: (d) => d.tpm },
        { label: 'Price', get: (d) => (d.free ? 'free' : unpriced.has(d.id) ? h('span', { class: 'pill failed', 'data-unpriced': d.id }, 'missing') : (d.base_model ? 'as ' + d.base_model : 'set')) }], deps),
      // A model without a price is refused under strict budgets and served
      // unpriced otherwise: say so where the deployments are.
      missing.length ? h('section', { class: 'warning', 'aria-label': 'Deployments without a price', id: 'missing-prices' },
        h('h2', {}, 'Deployments without a price'),
        h('p', {}, 'Requests to these are refused under strict budgets and recorded as unpriced otherwise. Set a price (tollgate price set), name the base model, or declare the deployment free.'),
        table([{ label: 'Deployment', get: (m) => m.deployment }, { label: 'Model', get: (m) => m.model || '—' },
          { label: 'Provider model', get: (m) => m.provider_model }, { label: 'Names tried', get: (m) => (m.names_tried || []).join(', ') }], missing)) : '',
      h('h2', {}, 'Providers'),
      table([idCol, { label: 'Actions', get: (p) => deleteButton('provider', p.id, 'ProviderService/DeleteProvider', refresh) },
        { label: 'Type', get: (p) => enumTail(p.type, 'PROVIDER_TYPE_') }, { label: 'Base URL', get: (p) => p.base_url },
        { label: 'Credential', get: (p) => (p.has_credential ? 'set' : 'none') }], provs));
    lists.dataset.deployments = deps.map((d) => d.id + '=' + (d.state ? d.state.health : 'unknown')).join('\n');
    forms.replaceChildren(isAdmin() ? h('div', {},
      writeForm('Create provider', [
        field('ID', inp('id', { required: true, size: 12 })),
        field('Type', sel('type', PROVIDER_TYPES)),
        field('Base URL', inp('base_url', { type: 'url', placeholder: 'https://api.openai.com/v1', size: 28 })),
        field('API version / region', inp('api_version', { size: 12 })),
        // The credential is sent once, sealed by the server and never shown again.
        field('Credential (API key)', inp('credential', { type: 'password', autocomplete: 'off', size: 20 })),
      ], async (f) => {
        const e = f.elements;
        await api('ProviderService/CreateProvider', { provider: { id: e.id.value.trim(), type: e.type.value, base_url: e.base_url.value.trim(), api_version: e.api_version.value.trim() }, credential: e.credential.value });
        say(`Created provider ${e.id.value.trim()}${e.credential.value ? ' (its credential is stored sealed and never shown)' : ''}.`);
        await refresh();
      }),
      writeForm('Create deployment', [
        field('ID', inp('id', { required: true, size: 12 })),
        field('Provider', sel('provider', provs.map((p) => [p.id, p.id]), { required: true })),
        field('Provider model', inp('provider_model', { required: true, size: 16 })),
        field('Weight', inp('weight', { type: 'number', min: 0, size: 4 })),
        field('RPM', inp('rpm', { type: 'number', min: 0, size: 6 })),
        field('TPM', inp('tpm', { type: 'number', min: 0, size: 8 })),
        field('Base model (for its price)', inp('base_model', { size: 14 })),
        field('Free', inp('free', { type: 'checkbox' })),
      ], async (f) => {
        const e = f.elements;
        const r = await api('DeploymentService/CreateDeployment', { deployment: { id: e.id.value.trim(), provider: e.provider.value, provider_model: e.provider_model.value.trim(),
          weight: Number(e.weight.value || 1), rpm: e.rpm.value || '0', tpm: e.tpm.value || '0', base_model: e.base_model.value.trim(), free: e.free.checked } });
        sayWarned(`Created deployment ${e.id.value.trim()}.`, r.warnings);
        await refresh();
      }),
      writeForm('Create model', [
        field('Public name', inp('id', { required: true, size: 14 })),
        field('Deployments (comma-separated)', inp('deployments', { required: true, placeholder: deps.slice(0, 2).map((d) => d.id).join(', ') })),
        field('Routing', sel('routing', ROUTINGS)),
        field('Fallbacks (comma-separated)', inp('fallbacks', { size: 14 })),
      ], async (f) => {
        const e = f.elements;
        await api('ModelService/CreateModel', { model: { id: e.id.value.trim(), deployments: csv(e.deployments.value), routing: e.routing.value, fallbacks: csv(e.fallbacks.value) } });
        say(`Created model ${e.id.value.trim()}.`);
        await refresh();
      })) : '');
  }
  const prices = h('section', { id: 'unit-prices', 'aria-label': 'Prices' });
  main.replaceChildren(h('h1', {}, 'Models and deployments'), forms, lists, prices);
  await Promise.all([refresh(), unitPrices(prices)]);
};

// --- unit prices (#34) -------------------------------------------------------
// The Models page's unit prices: each model priced per unit (per image by size
// and quality, per second of audio, per character of speech, per rerank search
// unit, image tokens), with its token prices beside, and a form setting the
// unit prices of a model, the others kept (SetPrice with an update mask).

// unitPriceText is a price's units in one line ('' when it has none), each
// amount exact (a unit price is often a fraction of a cent).
function unitPriceText(p) {
  const exact = (m) => '$' + ((m && m.dollars) || '0');
  const parts = Object.entries(p.per_image || {}).sort().map(([k, m]) => `image ${k === '*' ? '' : k + ' '}${exact(m)}`);
  for (const [f, what] of [['per_second', 'second'], ['per_character', 'character'], ['per_search_unit', 'search unit']]) {
    if (dollars(p[f])) parts.push(`${what} ${exact(p[f])}`);
  }
  if (dollars(p.image_input_tokens) || dollars(p.image_output_tokens)) {
    parts.push(`image tokens ${exact(p.image_input_tokens)}/${exact(p.image_output_tokens)} per 1M`);
  }
  return parts.join(' · ');
}

// perImageIn reads the per-image input: PRICE (any image), or
// SIZE/QUALITY=PRICE,SIZE=PRICE,*=PRICE.
function perImageIn(s) {
  const out = {};
  for (const part of csv(s)) {
    const [k, v] = part.includes('=') ? part.split('=', 2).map((x) => x.trim()) : ['*', part];
    if (!k || !/^\d+(\.\d+)?$/.test(v)) throw new Error(`per image: "${part}" is not PRICE or SIZE/QUALITY=PRICE`);
    out[k] = { dollars: v };
  }
  return out;
}

async function unitPrices(el) {
  const list = await listAll('PriceService/ListPrices', 'prices').catch(() => []);
  const form = writeForm('Set unit prices', [
    field('Model', inp('model', { required: true, size: 14 })),
    field('Per image ($)', inp('per_image', { size: 22, placeholder: '0.04 or 1024x1024/hd=0.08,*=0.04' })),
    field('Per second ($)', inp('per_second', { inputmode: 'decimal', size: 8 })),
    field('Per character ($)', inp('per_character', { inputmode: 'decimal', size: 8 })),
    field('Per search unit ($)', inp('per_search_unit', { inputmode: 'decimal', size: 8 })),
    field('Image tokens in/out ($ per 1M)', inp('image_tokens', { size: 8, placeholder: '10,40' })),
  ], async (f) => {
    const e = f.elements;
    const price = { model: e.model.value.trim() };
    const paths = [];
    if (e.per_image.value.trim()) { price.per_image = perImageIn(e.per_image.value); paths.push('per_image'); }
    for (const n of ['per_second', 'per_character', 'per_search_unit']) {
      if (e[n].value.trim()) { price[n] = { dollars: e[n].value.trim() }; paths.push(n); }
    }
    if (e.image_tokens.value.trim()) {
      const [i, o] = csv(e.image_tokens.value);
      price.image_input_tokens = { dollars: i || '0' };
      price.image_output_tokens = { dollars: o || '0' };
      paths.push('image_input_tokens', 'image_output_tokens');
    }
    if (!paths.length) throw new Error('Set at least one unit price.');
    await api('PriceService/SetPrice', { price, update_mask: paths.map((p) => p.replace(/_([a-z])/g, (_, c) => c.toUpperCase())).join(',') });
    say(`Set the unit prices of ${price.model}.`);
    await unitPrices(el);
  }, 'Set', isAdmin());
  el.replaceChildren(h('h2', {}, 'Prices'), form,
    table([{ label: 'Model', get: (p) => h('span', { 'data-price': p.model }, p.model) },
      { label: 'Input', num: true, get: (p) => usd(p.input) }, { label: 'Output', num: true, get: (p) => usd(p.output) },
      { label: 'Units', get: (p) => h('span', { class: 'units', 'data-units': p.model }, unitPriceText(p)) }],
    list.filter((p) => unitPriceText(p)).sort((a, b) => a.model.localeCompare(b.model)), 'No model has a price per unit yet.'));
}

// windowStart is when the current period of a budget started, and when it resets.
function windowOf(b, now = new Date()) {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  switch (b.period) {
    case 'PERIOD_KIND_DAILY': return [d, new Date(d.getTime() + 86400e3)];
    case 'PERIOD_KIND_WEEKLY': { const s = new Date(d.getTime() - ((d.getUTCDay() + 6) % 7) * 86400e3); return [s, new Date(s.getTime() + 7 * 86400e3)]; }
    case 'PERIOD_KIND_MONTHLY': return [new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)), new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1))];
    case 'PERIOD_KIND_ROLLING': { const every = parseFloat(b.every || '0') * 1000; return [new Date(now.getTime() - every), null]; }
    default: return [new Date(0), null];
  }
}

const PALETTE = ['#0b5cad', '#e8710a', '#1a7f37', '#b42318', '#8250df', '#0a7ea4', '#bf8700', '#cf222e', '#57606a', '#6e40c9'];

pages.spend = async () => {
  const controls = h('form', { class: 'filters' },
    field('Stack by', sel('group', [['key', 'key'], ['team', 'team'], ['model', 'model']])),
    field('Bucket', sel('step', [['86400s', 'day'], ['3600s', 'hour']])),
    field('Range', sel('range', [['7', 'last 7 days'], ['30', 'last 30 days'], ['1', 'last 24 hours']])));
  const charts = h('div', { class: 'charts' },
    h('figure', { class: 'chart' }, h('canvas', { id: 'cost-chart', role: 'img', 'aria-label': 'Cost over time' })),
    h('figure', { class: 'chart' }, h('canvas', { id: 'tokens-chart', role: 'img', 'aria-label': 'Tokens over time' })));
  const top = h('div', {});
  const budgetsEl = h('div', {});
  const reconcileEl = h('div', { id: 'reconcile' });
  controls.addEventListener('input', () => draw().catch((e) => say(e.message, true)));
  controls.addEventListener('submit', (e) => e.preventDefault());
  main.replaceChildren(h('h1', {}, 'Spend'), controls, charts, h('div', { class: 'grid2' },
    h('section', {}, h('h2', {}, 'Top spenders'), top), h('section', {}, h('h2', {}, 'Budgets used'), budgetsEl)),
    h('section', {}, h('h2', {}, 'Reconciliation'), reconcileEl));

  // labels names the series: a key by its alias and id.
  async function labels(kind) {
    if (kind !== 'key') return new Map();
    const keys = await listAll('KeyService/ListKeys', 'keys').catch(() => []);
    return new Map(keys.filter((k) => k.alias).map((k) => [k.id, `${k.alias} (${k.id})`]));
  }

  let drawing = 0; // the latest draw wins when controls change quickly
  async function draw() {
    const gen = ++drawing;
    const e = controls.elements;
    const days = Number(e.range.value);
    const stepS = parseInt(e.step.value, 10);
    const now = Date.now();
    const since = new Date(Math.floor((now - days * 86400e3) / (stepS * 1000)) * stepS * 1000).toISOString();
    // One call for every series (GetSpendBreakdown), not one per key: the
    // server answers from the hourly totals with one query.
    const t0 = performance.now();
    const [names, r] = await Promise.all([labels(e.group.value),
      api('SpendService/GetSpendBreakdown', { group_by: e.group.value, since, step: e.step.value })]);
    const t1 = performance.now();
    const series = (r.groups || []).map((g) => ({ id: names.get(g.id) || g.id, points: g.points || [] }));
    if (gen !== drawing) return;
    const labelsSet = new Set();
    series.forEach((s) => s.points.forEach((p) => labelsSet.add(p.start)));
    const starts = [...labelsSet].sort();
    const fmt = (t) => (stepS < 86400 ? when(t).slice(5, 16) : when(t).slice(0, 10));
    const withData = series.map((s) => ({ ...s, cost: s.points.reduce((a, p) => a + dollars(p.cost), 0), tokens: s.points.reduce((a, p) => a + Number(p.tokens || 0), 0), requests: s.points.reduce((a, p) => a + Number(p.requests || 0), 0) }))
      .filter((s) => s.cost > 0 || s.tokens > 0).sort((a, b) => b.cost - a.cost || b.tokens - a.tokens);
    const ds = (metric) => withData.map((s, i) => {
      const byStart = new Map(s.points.map((p) => [p.start, metric === 'cost' ? dollars(p.cost) : Number(p.tokens || 0)]));
      return { label: s.id, data: starts.map((t) => byStart.get(t) || 0), backgroundColor: PALETTE[i % PALETTE.length], stack: 's' };
    });
    S.charts.forEach((c) => c.destroy());
    S.charts = [];
    if (window.Chart) {
      const opts = (title, money) => ({
        responsive: true, maintainAspectRatio: false, animation: false,
        plugins: { title: { display: true, text: title }, legend: { position: 'bottom' },
          tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${money ? '$' + c.parsed.y.toFixed(6) : c.parsed.y}` } } },
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { callback: (v) => (money ? '$' + Number(v.toPrecision(3)) : v) } } },
      });
      S.charts.push(new window.Chart(document.getElementById('cost-chart'), { type: 'bar', data: { labels: starts.map(fmt), datasets: ds('cost') }, options: opts(`Cost (USD) by ${e.group.value}`, true) }));
      S.charts.push(new window.Chart(document.getElementById('tokens-chart'), { type: 'bar', data: { labels: starts.map(fmt), datasets: ds('tokens') }, options: opts(`Tokens by ${e.group.value}`, false) }));
    }
    charts.dataset.series = withData.map((s) => s.id).join('\n');
    // Where the time went (printed by the browser test, not asserted).
    charts.dataset.timing = JSON.stringify({ server_ms: Math.round(t1 - t0), render_ms: Math.round(performance.now() - t1), series: withData.length });
    charts.dataset.drawn = `${e.group.value}/${e.step.value}`;
    top.replaceChildren(table([
      { label: e.group.value[0].toUpperCase() + e.group.value.slice(1), get: (s) => s.id },
      { label: 'Cost', num: true, get: (s) => '$' + s.cost.toFixed(6) },
      { label: 'Tokens', num: true, get: (s) => s.tokens },
      { label: 'Requests', num: true, get: (s) => s.requests },
    ], withData.slice(0, 10), 'No spend in this range.'));
  }

  async function drawBudgets() {
    const [keys, teams, users, orgs, customers] = await Promise.all([
      listAll('KeyService/ListKeys', 'keys', { status: 'KEY_STATUS_ACTIVE' }).catch(() => []),
      listAll('TeamService/ListTeams', 'teams').catch(() => []),
      listAll('UserService/ListUsers', 'users').catch(() => []),
      listAll('OrgService/ListOrgs', 'orgs').catch(() => []),
      listAll('CustomerService/ListCustomers', 'customers').catch(() => []),
    ]);
    const scoped = [['SCOPE_KIND_KEY', keys], ['SCOPE_KIND_TEAM', teams], ['SCOPE_KIND_USER', users], ['SCOPE_KIND_ORG', orgs], ['SCOPE_KIND_CUSTOMER', customers]];
    const rows = [];
    for (const [kind, items] of scoped) {
      for (const it of items) {
        for (const b of (it.limits && it.limits.budgets) || []) {
          const [start, reset] = windowOf(b);
          rows.push({ kind, id: it.id, b, start, reset });
        }
      }
    }
    // One breakdown per scope kind and window start (every monthly team
    // budget shares one), a single bucket from the start to now, instead of
    // one GetSpend per budget.
    const windows = new Map();
    for (const r of rows) {
      const k = r.kind + '|' + r.start.toISOString();
      if (!windows.has(k)) windows.set(k, []);
      windows.get(k).push(r);
    }
    await Promise.all([...windows.values()].map(async (rs) => {
      const start = rs[0].start;
      const hours = Math.max(1, Math.ceil((Date.now() - start.getTime()) / 3600e3));
      const res = await api('SpendService/GetSpendBreakdown', { group_by: enumTail(rs[0].kind, 'SCOPE_KIND_'), since: start.toISOString(),
        until: new Date(start.getTime() + hours * 3600e3).toISOString(), step: hours * 3600 + 's' }).catch(() => null);
      const used = new Map(((res && res.groups) || []).map((g) => [g.id, dollars(g.total)]));
      rs.forEach((r) => { r.used = res ? used.get(r.id) || 0 : NaN; });
    }));
    budgetsEl.replaceChildren(table([
      { label: 'Scope', get: (r) => `${enumTail(r.kind, 'SCOPE_KIND_')} ${r.id}` },
      { label: 'Period', get: (r) => period(r.b.period) + (r.b.time_zone ? ' @' + r.b.time_zone : '') },
      { label: 'Used', num: true, get: (r) => (isNaN(r.used) ? '?' : '$' + r.used.toFixed(6)) },
      { label: 'Limit', num: true, get: (r) => usd(r.b.limit) },
      { label: '%', get: (r) => h('meter', { min: 0, max: dollars(r.b.limit), low: dollars(r.b.limit) * 0.75, high: dollars(r.b.limit) * 0.9, optimum: 0, value: isNaN(r.used) ? 0 : r.used, title: `${((r.used / dollars(r.b.limit)) * 100 || 0).toFixed(1)}%` }) },
      { label: 'Resets', get: (r) => (r.reset ? when(r.reset.toISOString()) : r.b.period === 'PERIOD_KIND_ROLLING' ? 'rolling' : 'never') },
    ], rows, 'No scope has a budget.'));
  }
  // The last scheduled reconciliation of each provider against its own usage
  // and cost reports (docs/reconcile.md), and the cells of each that drifted.
  async function drawReconcile() {
    const runs = (await api('ReconcileService/ListReconcileRuns', {}).catch(() => ({}))).runs || [];
    const pctOf = (v) => (100 * Number(v || 0)).toFixed(2) + '%';
    const state = (r) => (r.error ? 'error: ' + r.error : r.alert ? 'alert' : 'ok');
    const drifted = runs.flatMap((r) => (r.cells || []).filter((c) => c.drift && (Number(c.drift.tokens || 0) !== 0 || Number(c.drift.requests || 0) !== 0 || Number((c.drift.cost || {}).nano_usd || 0) !== 0))
      .map((c) => ({ provider: r.provider, ...c })));
    reconcileEl.replaceChildren(
      table([
        { label: 'Provider', get: (r) => r.provider },
        { label: 'Ran at', get: (r) => when(r.ran_at) },
        { label: 'Days', get: (r) => (r.from ? `${r.from} … ${r.to}` : '') },
        { label: 'Ledger', num: true, get: (r) => usd((r.ledger || {}).cost) },
        { label: 'Provider billed', num: true, get: (r) => usd((r.reported || {}).cost) },
        { label: 'Worst cell', num: true, get: (r) => pctOf(r.worst_rel) },
        { label: 'State', get: (r) => h('span', { class: 'pill ' + (r.error || r.alert ? 'revoked' : 'active') }, state(r)) },
      ], runs, 'No scheduled reconciliation yet (tollgate run --reconcile-interval, and a provider admin credential).'),
      drifted.length ? table([
        { label: 'Provider', get: (c) => c.provider },
        { label: 'Day', get: (c) => c.day },
        { label: 'Model', get: (c) => c.model + ((c.public_models || []).length ? ` (${c.public_models.join(', ')})` : '') },
        { label: 'Δ tokens', num: true, get: (c) => `${c.drift.tokens || 0} (${pctOf(c.drift.tokens_rel)})` },
        { label: 'Δ requests', num: true, get: (c) => `${c.drift.requests || 0}` },
        { label: 'Δ cost', num: true, get: (c) => `${usd(c.drift.cost)} (${pctOf(c.drift.cost_rel)})` },
        { label: 'Ledger rows', num: true, get: (c) => (c.request_ids || []).length },
      ], drifted) : h('p', {}, runs.length ? 'No cell drifted.' : ''));
  }
  await Promise.all([draw(), drawBudgets(), drawReconcile()]);
};

pages.requests = async () => {
  const controls = h('form', { class: 'filters', role: 'search' },
    field('Key', inp('key', { size: 14 })), field('Team', inp('team', { size: 10 })), field('Model', inp('model', { size: 10 })),
    field('Status', sel('status', [['', 'any'], ['REQUEST_STATUS_COMPLETED', 'completed'], ['REQUEST_STATUS_FAILED', 'failed'], ['REQUEST_STATUS_ABORTED', 'aborted'], ['REQUEST_STATUS_EXPIRED', 'expired']])),
    field('Since', sel('days', [['1', 'last 24 hours'], ['7', 'last 7 days'], ['30', 'last 30 days']])),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'));
  const list = h('div', {});
  const detail = h('div', {});
  async function refresh() {
    const e = controls.elements;
    const req = { since: new Date(Date.now() - Number(e.days.value) * 86400e3).toISOString(), model: e.model.value.trim() };
    if (e.key.value.trim()) req.scope = { kind: 'SCOPE_KIND_KEY', id: e.key.value.trim() };
    else if (e.team.value.trim()) req.scope = { kind: 'SCOPE_KIND_TEAM', id: e.team.value.trim() };
    let entries = await listAll('SpendService/ListSpendEntries', 'entries', req, 10);
    if (e.status.value) entries = entries.filter((x) => x.status === e.status.value);
    entries = entries.reverse().slice(0, 200); // newest first
    list.replaceChildren(table([
      { label: 'Started', get: (x) => when(x.started_at) },
      { label: 'Key', get: (x) => x.key_id },
      { label: 'Team', get: (x) => x.team_id },
      { label: 'Model', get: (x) => x.model },
      { label: 'Status', get: (x) => h('span', { class: 'pill ' + enumTail(x.status, 'REQUEST_STATUS_') }, enumTail(x.status, 'REQUEST_STATUS_') + ' ' + (x.http_status || '')) },
      { label: 'Tokens in/out', num: true, get: (x) => `${(x.usage && x.usage.input) || 0} / ${(x.usage && x.usage.output) || 0}` },
      { label: 'Cost', num: true, get: (x) => (x.unpriced ? h('span', { class: 'pill failed', title: 'the model had no price' }, 'unpriced') : usd(x.cost)) },
      { label: '', get: (x) => h('button', { type: 'button', 'data-request': x.request_id, onclick: () => show(x) }, 'Details') },
    ], entries, 'No request in this range.'));
  }
  function show(x) {
    const rows = [['Request ID', x.request_id], ['Key', x.key_id], ['User', x.user_id], ['Team', x.team_id], ['Org', x.org_id], ['Customer', x.customer_id],
      ['Model', x.model], ['Deployment', x.deployment], ['Status', enumTail(x.status, 'REQUEST_STATUS_')], ['HTTP status', x.http_status], ['Stream', x.stream ? 'yes' : 'no'],
      ['Input tokens', x.usage && x.usage.input], ['Cached input', x.usage && x.usage.cached_input], ['Cache write', x.usage && x.usage.cache_write],
      ['Output tokens', x.usage && x.usage.output], ['Reasoning', x.usage && x.usage.reasoning], ['Cost', x.unpriced ? 'unpriced (the model had no price)' : x.cost && x.cost.dollars ? '$' + x.cost.dollars : '$0'],
      ['Started', when(x.started_at)], ['Ended', when(x.ended_at)]];
    const sec = h('section', { 'aria-label': 'Request detail', id: 'request-detail', tabindex: '-1' }, h('h2', {}, 'Request ' + x.request_id),
      h('dl', { class: 'detail' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v === undefined || v === '' ? '—' : String(v))])));
    detail.replaceChildren(sec);
    sec.focus();
  }
  controls.addEventListener('submit', (ev) => { ev.preventDefault(); refresh().catch((err) => say(err.message, true)); });
  main.replaceChildren(h('h1', {}, 'Requests'), controls, detail, list);
  await refresh();
};

pages.audit = async () => {
  const entries = (await listAll('AuditService/ListAudit', 'entries')).reverse();
  main.replaceChildren(h('h1', {}, 'Audit log'), table([
    { label: 'When', get: (a) => when(a.at) },
    { label: 'Actor', get: (a) => a.actor },
    { label: 'Action', get: (a) => a.action },
    { label: 'Target', get: (a) => `${a.kind} ${a.target}` },
    { label: 'Detail', get: (a) => h('code', {}, a.detail) },
  ], entries));
};

// Guardrails (issue 32): list, create, delete, and attach to a key, team,
// org or model. Writes need the admin role.
pages.guardrails = async () => {
  const list = h('div');
  const csv = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);
  const refresh = async () => {
    const items = await listAll('GuardrailService/ListGuardrails', 'guardrails');
    list.replaceChildren(table([
      { label: 'Name', get: (g) => g.name },
      { label: 'Kind', get: (g) => g.kind },
      { label: 'Action', get: (g) => g.action },
      { label: 'On', get: (g) => (g.on || ['pre']).join(', ') },
      { label: 'Checks', get: (g) => [...(g.types || []), ...(g.words || []).map((w) => `"${w}"`), ...(g.patterns || []).map((x) => `/${x}/`),
        g.max_bytes && g.max_bytes !== '0' ? `≤ ${g.max_bytes} bytes` : '', g.url || '', g.provider || ''].filter(Boolean).join(', ') },
      { label: 'Mandatory', get: (g) => (g.mandatory ? 'yes' : '') },
      { label: 'On failure', get: (g) => (g.kind === 'webhook' || g.kind === 'moderation' ? (g.fail_open ? 'fail open' : 'fail closed') : '') },
      { label: 'Actions', get: (g) => (isAdmin() ? h('button', { type: 'button', class: 'danger', 'data-action': 'delete', 'data-id': g.name, onclick: async () => {
        if (!confirm(`Delete guardrail ${g.name}?`)) return;
        try {
          await api('GuardrailService/DeleteGuardrail', { name: g.name });
          say(`Deleted guardrail ${g.name}.`);
          await refresh();
        } catch (err) { say(err.message, true); }
      } }, 'Delete') : '') },
    ], items, 'No guardrails yet.'));
  };
  const create = writeForm('Create guardrail', [
    field('Name', inp('name', { required: true, size: 12 })),
    field('Kind', sel('kind', [['pii', 'pii'], ['secrets', 'secrets'], ['words', 'words'], ['size', 'size'], ['webhook', 'webhook'], ['moderation', 'moderation']])),
    field('Action', sel('action', [['block', 'block'], ['redact', 'redact'], ['log', 'log']])),
    field('On (comma-separated)', inp('on', { placeholder: 'pre', size: 14 })),
    field('Types', inp('types', { placeholder: 'all', size: 14 })),
    field('Words', inp('words', { size: 14 })),
    field('Max bytes', inp('max_bytes', { type: 'number', min: 1, size: 8 })),
    field('URL', inp('url', { size: 20 })),
    field('Provider', inp('provider', { size: 10 })),
    field('Mandatory', inp('mandatory', { type: 'checkbox' })),
    field('Fail open', inp('fail_open', { type: 'checkbox' })),
  ], async (f) => {
    const v = (n) => f.elements[n].value.trim();
    const g = { name: v('name'), kind: v('kind'), action: v('action'), on: csv(v('on')), types: csv(v('types')), words: csv(v('words')),
      mandatory: f.elements.mandatory.checked, fail_open: f.elements.fail_open.checked };
    if (v('max_bytes')) g.max_bytes = v('max_bytes');
    if (v('url')) g.url = v('url');
    if (v('provider')) g.provider = v('provider');
    await api('GuardrailService/CreateGuardrail', { guardrail: g });
    say(`Created guardrail ${g.name}.`);
    await refresh();
  }, 'Create', isAdmin());
  const attachForm = writeForm('Attach guardrails', [
    field('Scope', sel('scope', [['key', 'key'], ['team', 'team'], ['org', 'org'], ['model', 'model']])),
    field('ID', inp('id', { required: true, size: 12 })),
    field('Guardrails (comma-separated; -NAME on a key removes one)', inp('guardrails', { size: 20 })),
  ], async (f) => {
    const r = await api('GuardrailService/SetGuardrails', { scope: f.elements.scope.value, id: f.elements.id.value.trim(), guardrails: csv(f.elements.guardrails.value) });
    say(`${f.elements.scope.value} ${f.elements.id.value.trim()}: guardrails ${(r.guardrails || []).join(', ') || 'none'}.`);
  }, 'Attach', isAdmin());
  main.replaceChildren(h('h1', {}, 'Guardrails'), create, attachForm, list);
  await refresh();
};

// The response cache: hit rate and savings per model and per key
// (docs/caching.md), from the spend breakdown's cache counts.
pages.cache = async () => {
  const controls = h('form', { class: 'filters' },
    field('Range', sel('range', [['7', 'last 7 days'], ['30', 'last 30 days'], ['1', 'last 24 hours']])));
  const summary = h('p', { id: 'cache-summary' });
  const byModel = h('div', {});
  const byKey = h('div', {});
  controls.addEventListener('input', () => draw().catch((e) => say(e.message, true)));
  controls.addEventListener('submit', (e) => e.preventDefault());
  main.replaceChildren(h('h1', {}, 'Cache'), controls, summary,
    h('section', {}, h('h2', {}, 'By model'), byModel), h('section', {}, h('h2', {}, 'By key'), byKey));
  const n = (v) => Number(v || 0);
  const rate = (c) => (n(c.hits) + n(c.misses) ? (100 * n(c.hits) / (n(c.hits) + n(c.misses))).toFixed(1) + '%' : '—');
  const columns = (label) => [
    { label, get: (g) => g.id },
    { label: 'Requests', num: true, get: (g) => n(g.requests) },
    { label: 'Hits', num: true, get: (g) => n(g.cache.hits) },
    { label: 'Misses', num: true, get: (g) => n(g.cache.misses) },
    { label: 'Hit rate', num: true, get: (g) => rate(g.cache) },
    { label: 'Saved', num: true, get: (g) => usd(g.cache.saved) },
    { label: 'Spend', num: true, get: (g) => usd(g.total) },
  ];
  async function draw() {
    const since = new Date(Date.now() - Number(controls.elements.range.value) * 86400e3).toISOString();
    const [models, keys] = await Promise.all(['model', 'key'].map((by) => api('SpendService/GetSpendBreakdown', { group_by: by, since })));
    const cached = (r) => (r.groups || []).filter((g) => g.cache).sort((a, b) => dollars(b.cache.saved) - dollars(a.cache.saved) || n(b.cache.hits) - n(a.cache.hits));
    const ms = cached(models);
    const total = ms.reduce((a, g) => ({ hits: a.hits + n(g.cache.hits), misses: a.misses + n(g.cache.misses), saved: a.saved + dollars(g.cache.saved) }), { hits: 0, misses: 0, saved: 0 });
    summary.textContent = ms.length
      ? `${total.hits} hits, ${total.misses} misses: hit rate ${rate(total)}, saved $${total.saved.toFixed(6)}.`
      : 'No cached model group answered a request in this range (turn a cache on with tollgate model update NAME --cache exact).';
    byModel.replaceChildren(table(columns('Model'), ms, 'No cache hits or misses.'));
    byKey.replaceChildren(table(columns('Key'), cached(keys).slice(0, 50), 'No cache hits or misses.'));
    main.dataset.cacheDrawn = 'yes';
  }
  await draw();
};

// MCP servers (issue 31): the upstream servers agents reach through /mcp,
// their prices and rpm (the credential is write-only: only whether one is
// set is shown), and the tool calls' spend by server and by tool.
// Writes need the admin role.
pages.mcp = async () => {
  const servers = h('div', { id: 'mcp-servers' });
  const byServer = h('div', { id: 'mcp-spend-servers' });
  const byTool = h('div', { id: 'mcp-spend-tools' });
  const controls = h('form', { class: 'filters' },
    field('Range', sel('range', [['7', 'last 7 days'], ['30', 'last 30 days'], ['1', 'last 24 hours']])));
  const n = (v) => Number(v || 0);
  const pairs = (m, f = (v) => v) => Object.entries(m || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${f(v)}`).join(', ');
  const refresh = async () => {
    const items = await listAll('MCPService/ListMCPServers', 'servers');
    servers.replaceChildren(table([
      { label: 'ID', get: (s) => s.id },
      { label: 'URL', get: (s) => h('code', {}, s.url) },
      { label: 'Price per call', num: true, get: (s) => usd(s.price_per_call) },
      { label: 'Tool prices', get: (s) => pairs(s.tool_prices, usd) },
      { label: 'RPM', num: true, get: (s) => (s.rpm && s.rpm !== '0' ? s.rpm : '') },
      { label: 'Credential', get: (s) => (s.has_credential ? 'set' + (s.credential_header ? ` (${s.credential_header})` : '') : 'none') },
      { label: 'Headers', get: (s) => pairs(s.headers) },
      { label: 'Actions', get: (s) => deleteButton('MCP server', s.id, 'MCPService/DeleteMCPServer', refresh) },
    ], items, 'No MCP server yet (tollgate mcp-server create ID --url URL).'));
  };
  async function spend() {
    const since = new Date(Date.now() - Number(controls.elements.range.value) * 86400e3).toISOString();
    const [s, t] = await Promise.all(['mcp_server', 'mcp_tool'].map((by) => api('SpendService/GetSpendBreakdown', { group_by: by, since })));
    const cols = (label) => [
      { label, get: (g) => g.id },
      { label: 'Spend', num: true, get: (g) => usd(g.total) },
      { label: 'Calls', num: true, get: (g) => n(g.requests) },
    ];
    byServer.replaceChildren(table(cols('Server'), s.groups || [], 'No tool call in this range.'));
    byTool.replaceChildren(table(cols('Tool'), t.groups || [], 'No tool call in this range.'));
    main.dataset.mcpDrawn = 'yes';
  }
  const create = writeForm('Add an MCP server', [
    field('ID', inp('id', { required: true, size: 10, pattern: '[A-Za-z0-9\\-]+' })),
    field('URL', inp('url', { required: true, size: 30, type: 'url' })),
    field('Credential', inp('credential', { type: 'password', size: 14, autocomplete: 'off' })),
    field('Price per call ($)', inp('price', { inputmode: 'decimal', placeholder: '0.001', size: 8 })),
    field('Tool prices (TOOL=USD, comma-separated)', inp('tool_prices', { placeholder: 'create_issue=0.01', size: 20 })),
    field('RPM', inp('rpm', { type: 'number', min: 0, size: 6 })),
    field('Headers (NAME=VALUE, comma-separated; not secret)', inp('headers', { size: 20 })),
  ], async (f) => {
    const v = (x) => f.elements[x].value.trim();
    const kv = (s) => Object.fromEntries(csv(s).map((p) => { const i = p.indexOf('='); return [p.slice(0, i).trim(), p.slice(i + 1).trim()]; }));
    const server = { id: v('id'), url: v('url'), headers: kv(v('headers')),
      tool_prices: Object.fromEntries(Object.entries(kv(v('tool_prices'))).map(([k, x]) => [k, { dollars: x }])) };
    if (v('price')) server.price_per_call = { dollars: v('price') };
    if (v('rpm')) server.rpm = v('rpm');
    const req = { server };
    if (v('credential')) req.credential = v('credential');
    await api('MCPService/CreateMCPServer', req);
    say(`Added MCP server ${server.id}.`);
    await refresh();
  }, 'Add', isAdmin());
  controls.addEventListener('input', () => spend().catch((e) => say(e.message, true)));
  controls.addEventListener('submit', (e) => e.preventDefault());
  main.replaceChildren(h('h1', {}, 'MCP servers'),
    h('p', { class: 'muted' }, 'Agents reach every server their key may use at /mcp (tools named SERVER__TOOL), one server at /mcp/SERVER. Grant tools with tollgate mcp-tools set.'),
    create, servers, h('section', {}, h('h2', {}, 'Tool spend by server'), controls, byServer),
    h('section', {}, h('h2', {}, 'Tool spend by tool'), byTool));
  await Promise.all([refresh(), spend()]);
};

// Alerts (issue 36): the alerts fired with their deliveries, the sinks every
// replica delivers to, and the settings. Writes need the admin role.
pages.alerts = async () => {
  const fired = h('div', { id: 'alerts-fired' });
  const sinks = h('div', { id: 'alert-sinks' });
  const settings = h('p', { id: 'alert-settings' });
  const refresh = async () => {
    const [a, k, st] = await Promise.all([api('AlertService/ListAlerts', { limit: 200 }), api('AlertService/ListAlertSinks'), api('AlertService/GetAlertSettings')]);
    fired.replaceChildren(table([
      { label: 'Fired', get: (x) => when(x.fired_at) },
      { label: 'Kind', get: (x) => x.kind },
      { label: 'Scope', get: (x) => (x.scope ? enumTail(x.scope.kind, 'SCOPE_KIND_') + (x.scope.id ? ' ' + x.scope.id : '') : '') },
      { label: 'Message', get: (x) => x.message },
      { label: 'Deliveries', get: (x) => h('span', {}, (x.deliveries || []).map((d) => h('span', { class: 'pill ' + (d.ok ? 'completed' : 'failed'), title: d.error || '' },
        `${d.sink}: ${d.ok ? 'delivered' : 'failed'} (${d.attempts} attempt${d.attempts === 1 ? '' : 's'})`))) },
    ], a.alerts || [], 'No alert has fired.'));
    sinks.replaceChildren(table([
      { label: 'Sink', get: (x) => x.id },
      { label: 'Kind', get: (x) => x.kind },
      { label: 'URL', get: (x) => x.url },
      { label: 'Signed', get: (x) => (x.has_secret ? 'yes' : '') },
      { label: 'Actions', get: (x) => deleteButton('alert sink', x.id, 'AlertService/DeleteAlertSink', refresh) },
    ], k.sinks || [], 'No sink: alerts are kept here and in the audit log only.'));
    const s = st.settings || {};
    settings.textContent = `Thresholds: ${(s.thresholds_pct || []).length ? s.thresholds_pct.join(', ') + ' %' : '50, 80, 100 % (default)'}; ` +
      `spend anomaly: ${s.anomaly_factor ? s.anomaly_factor + '× a key\'s hourly average' : 'the gateway\'s --alert-anomaly-factor'}; ` +
      `keys expiring within ${s.expiring_within || '7 days'}.`;
  };
  const create = writeForm('Add an alert sink', [
    field('Name', inp('id', { required: true, size: 12 })),
    field('Kind', sel('kind', [['webhook', 'webhook (signed JSON)'], ['slack', 'Slack incoming webhook']])),
    field('URL', inp('url', { required: true, size: 30, type: 'url' })),
    field('Secret (webhook)', inp('secret', { type: 'password', size: 14, autocomplete: 'off' })),
  ], async (f) => {
    const v = (n) => f.elements[n].value.trim();
    const sink = { id: v('id'), kind: v('kind'), url: v('url') };
    if (v('secret')) sink.secret = v('secret');
    await api('AlertService/CreateAlertSink', { sink });
    say(`Added alert sink ${sink.id}.`);
    await refresh();
  }, 'Add', isAdmin());
  const tune = writeForm('Alert settings', [
    field('Thresholds % (comma-separated)', inp('thresholds', { placeholder: '50, 80, 100', size: 12 })),
    field('Anomaly factor', inp('factor', { type: 'number', min: 0, size: 5 })),
    field('Expiring within (hours)', inp('expiring', { type: 'number', min: 0, size: 5 })),
  ], async (f) => {
    const v = (n) => f.elements[n].value.trim();
    const s = { thresholds_pct: csv(v('thresholds')).map(Number), anomaly_factor: Number(v('factor') || 0) };
    if (v('expiring')) s.expiring_within = Number(v('expiring')) * 3600 + 's';
    await api('AlertService/UpdateAlertSettings', { settings: s });
    say('Alert settings saved.');
    await refresh();
  }, 'Save', isAdmin());
  main.replaceChildren(h('h1', {}, 'Alerts'), settings, create, tune,
    h('section', {}, h('h2', {}, 'Fired'), fired), h('section', {}, h('h2', {}, 'Sinks'), sinks));
  await refresh();
};

// breakdownPage is a page of spend grouped by one group_by (runs, tags):
// each group's total, requests and tokens over a range, largest first.
function breakdownPage(title, groupBy, label, empty, options = []) {
  return async () => {
    const controls = h('form', { class: 'filters' },
      options.length ? field('Group', sel('group', options)) : '',
      field('Range', sel('range', [['7', 'last 7 days'], ['30', 'last 30 days'], ['1', 'last 24 hours']])));
    const list = h('div', { id: groupBy + '-groups' });
    const n = (v) => Number(v || 0);
    async function draw() {
      const e = controls.elements;
      const by = e.group && e.group.value ? e.group.value : groupBy;
      const since = new Date(Date.now() - Number(e.range.value) * 86400e3).toISOString();
      const r = await api('SpendService/GetSpendBreakdown', { group_by: by, since });
      list.replaceChildren(table([
        { label, get: (g) => g.id },
        { label: 'Spend', num: true, get: (g) => usd(g.total) },
        { label: 'Requests', num: true, get: (g) => n(g.requests) },
        { label: 'Tokens', num: true, get: (g) => n(g.tokens) },
      ], r.groups || [], empty));
      main.dataset.drawn = by;
    }
    controls.addEventListener('input', () => draw().catch((err) => say(err.message, true)));
    controls.addEventListener('submit', (ev) => ev.preventDefault());
    main.replaceChildren(h('h1', {}, title), controls, list);
    await draw();
  };
}

// Runs (x-tollgate-run-id): each run's spend; `tollgate spend logs --run ID`
// lists a run's calls.
pages.runs = breakdownPage('Runs', 'run', 'Run', 'No run spent in this range (a request names its run with x-tollgate-run-id).');

// Tags: spend by every tag name=value, or by the values of one tag name.
pages.tags = async () => {
  const budgetsEl = h('div', { id: 'tag-budgets' });
  const names = new Set();
  const all = await api('SpendService/GetSpendBreakdown', { group_by: 'tag', since: new Date(Date.now() - 30 * 86400e3).toISOString() });
  (all.groups || []).forEach((g) => names.add(g.id.split('=')[0]));
  await breakdownPage('Tags', 'tag', 'Tag', 'No tagged request in this range (x-tollgate-tags: name=value, or a key\'s default tags).',
    [['', 'every tag'], ...[...names].sort().map((x) => ['tag:' + x, x])])();
  const tb = await api('TagService/ListTagBudgets');
  budgetsEl.replaceChildren(table([
    { label: 'Tag', get: (t) => t.tag },
    { label: 'Budgets', get: (t) => budgets(t.limits) },
  ], tb.tag_budgets || [], 'No tag has a budget (tollgate tag-budget set).'));
  main.append(h('section', {}, h('h2', {}, 'Tag budgets'), budgetsEl));
};

// ---- shell ---------------------------------------------------------------

async function route() {
  if (!S.cred) return;
  const name = (location.hash.replace(/^#\/?/, '') || 'keys').split('?')[0];
  const page = pages[name] || pages.keys;
  document.querySelectorAll('nav a').forEach((a) => {
    if (a.getAttribute('href') === '#/' + name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  document.title = `${name[0].toUpperCase() + name.slice(1)} · Tollgate console`;
  say('');
  main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  try {
    await page();
    main.dataset.page = name;
  } catch (err) {
    main.replaceChildren(h('h1', {}, name), h('p', { class: 'error' }, err.message));
  }
  main.focus();
}

function signedIn(info) {
  S.csrf = info.csrf;
  S.cred = info.credential;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  document.getElementById('who').textContent = `${S.cred.id} · ${roleName(S.cred.role)}${S.cred.team_id ? ' of ' + S.cred.team_id : ''}`;
  route();
}

function showSignIn(message = '') {
  S.cred = null;
  S.csrf = '';
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  const key = h('input', { id: 'admin-key', name: 'key', type: 'password', autocomplete: 'current-password', required: true, placeholder: 'tga-…' });
  const err = h('p', { class: 'error', role: 'alert' }, message);
  const f = h('form', {}, h('label', { for: 'admin-key' }, 'Admin key'), key, err, h('button', { class: 'primary', type: 'submit' }, 'Sign in'));
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await fetch('/ui/api/session', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ key: key.value }) });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) { err.textContent = data.message || `sign-in failed (HTTP ${r.status})`; key.focus(); return; }
    signedIn(data);
  });
  main.replaceChildren(h('section', { class: 'signin' }, h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'Use an admin key: the one `tollgate run` printed at first start, or one from `tollgate admin-key create`. Its role decides what you can change.'), f));
  key.focus();
}

document.getElementById('signout').addEventListener('click', async () => {
  await fetch('/ui/api/session', { method: 'DELETE', headers: { 'X-CSRF-Token': S.csrf } });
  showSignIn('Signed out.');
});
window.addEventListener('hashchange', route);

fetch('/ui/api/session').then(async (r) => (r.ok ? signedIn(await r.json()) : showSignIn())).catch(() => showSignIn());
