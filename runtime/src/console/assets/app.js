// The approvals console's page: sign in, pending approvals (approve, approve
// with edited arguments, deny with a reason, accept or dismiss a built-in
// tool's "always allow" candidate), the audit view and its chart.
// Text from the server is set with textContent only (never as HTML).
'use strict';

let csrf = null;
let chart = null;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw Object.assign(new Error(data.message || r.statusText), { code: data.error, status: r.status });
  return data;
}

function signedIn(me) {
  csrf = me.csrf;
  $('signin').hidden = true;
  $('approvals').hidden = false;
  $('audit').hidden = false;
  $('who').hidden = false;
  $('who-name').textContent = `${me.principal}${me.roles.length ? ' (' + me.roles.join(', ') + ')' : ''}`;
  loadApprovals();
  loadAudit();
}

function time(ms) {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function approvalCard(a) {
  const dl = el('dl', {},
    el('dt', {}, 'tool'), el('dd', { class: 'tool' }, a.tool + (a.description ? ` — ${a.description}` : '')),
    el('dt', {}, 'caller'), el('dd', {}, `${a.caller ?? '?'}${a.tenant ? ' @ ' + a.tenant : ''}`),
    el('dt', {}, 'run'), el('dd', {}, a.run_id),
    el('dt', {}, 'why'), el('dd', {}, a.reasons.join('; ')),
    el('dt', {}, 'approver role'), el('dd', {}, a.approver_role ?? '(any)'),
    el('dt', {}, 'policy version'), el('dd', {}, a.policy_version),
    el('dt', {}, 'expires'), el('dd', {}, time(a.expires_ms)),
  );
  const card = el('div', { class: 'approval', 'data-id': a.id, 'data-tool': a.tool }, el('strong', {}, a.id), dl);
  if (!a.entitled) {
    card.append(el('p', {}, `Needs role ${a.approver_role}: you cannot decide it, so its arguments are not shown.`));
    return card;
  }
  const args = el('textarea', { class: 'args', spellcheck: false, value: JSON.stringify(a.args, null, 2) });
  const reason = el('input', { class: 'reason', placeholder: 'reason (required to deny)' });
  const status = el('span', { class: 'status', role: 'status' });
  const approve = el('button', { type: 'button', class: 'approve' }, 'Approve');
  const deny = el('button', { type: 'button', class: 'deny' }, 'Deny');
  const original = JSON.stringify(a.args);
  approve.addEventListener('click', async () => {
    let edited;
    try {
      edited = JSON.parse(args.value);
    } catch (e) {
      status.className = 'status error';
      status.textContent = 'the arguments are not JSON';
      return;
    }
    const body = JSON.stringify(edited) === original ? {} : { args: edited };
    try {
      const done = await api('POST', `api/approvals/${encodeURIComponent(a.id)}/approve`, body);
      status.className = 'status ok';
      status.textContent = body.args ? `approved with edited arguments as ${done.id}` : 'approved';
      setTimeout(loadApprovals, 400);
    } catch (e) {
      status.className = 'status error';
      status.textContent = `${e.code}: ${e.message}`;
    }
  });
  deny.addEventListener('click', async () => {
    try {
      await api('POST', `api/approvals/${encodeURIComponent(a.id)}/deny`, { reason: reason.value });
      status.className = 'status ok';
      status.textContent = 'denied';
      setTimeout(loadApprovals, 400);
    } catch (e) {
      status.className = 'status error';
      status.textContent = `${e.code}: ${e.message}`;
    }
  });
  card.append(el('label', {}, 'Arguments that will run (edit to change them):'), args, el('div', { class: 'actions' }, approve, reason, deny, status));
  if (a.candidates && a.candidates.length) card.append(candidateList(a, status));
  return card;
}

// A built-in tool's "always allow" candidates: accepting one grants this
// approval and writes the rule to the harness's permission file; dismissing
// one stops this console offering it.
function candidateList(a, status) {
  const list = el('ul', { class: 'candidates' });
  for (const c of a.candidates) {
    const accept = el('button', { type: 'button', class: 'accept-candidate' }, 'Accept');
    const dismiss = el('button', { type: 'button', class: 'dismiss-candidate' }, 'Dismiss');
    const item = el('li', { class: 'candidate', 'data-candidate': c.id }, el('span', { class: 'description' }, c.description), accept, dismiss);
    const post = async (action, done) => {
      try {
        await api('POST', `/api/approvals/${encodeURIComponent(a.id)}/${action}`, { candidate: c.id });
        done();
      } catch (e) {
        status.className = 'status error';
        status.textContent = `${e.code}: ${e.message}`;
      }
    };
    accept.addEventListener('click', () => post('accept_candidate', () => {
      status.className = 'status ok';
      status.textContent = `accepted “${c.description}”; approved`;
      setTimeout(loadApprovals, 400);
    }));
    dismiss.addEventListener('click', () => post('dismiss_candidate', () => item.remove()));
    list.append(item);
  }
  return el('div', { class: 'candidate-box' }, el('label', {}, 'Always allow (written to the permission file when accepted):'), list);
}

async function loadApprovals() {
  const data = await api('GET', 'api/approvals');
  const pending = data.approvals.filter((a) => a.state === 'pending');
  const list = $('approval-list');
  list.replaceChildren(...pending.map(approvalCard));
  $('approvals-empty').hidden = pending.length > 0;
}

// Allowed calls are green; each code keeps one colour whatever else is on the chart.
const PALETTE = ['#c62828', '#ef6c00', '#1565c0', '#6a1b9a', '#00838f', '#ad1457', '#4e342e', '#9e9d24'];
const colour = (label) => label === 'allowed' ? '#2e7d32' : PALETTE[[...label].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % PALETTE.length];

async function loadAudit() {
  const form = new FormData($('audit-filter'));
  const q = new URLSearchParams();
  for (const k of ['tool', 'principal', 'decision', 'code']) if (form.get(k)) q.set(k, form.get(k));
  if (form.get('since')) q.set('since_ms', String(Date.parse(form.get('since'))));
  if (form.get('until')) q.set('until_ms', String(Date.parse(form.get('until'))));
  const data = await api('GET', 'api/audit?' + q.toString());
  $('audit-total').textContent = `${data.total} event(s)`;
  $('audit-table').tBodies[0].replaceChildren(...data.events.map((e) => el('tr', { class: e.decision },
    el('td', {}, time(e.ts_ms)), el('td', {}, e.decision), el('td', {}, e.tool), el('td', {}, e.principal),
    el('td', {}, e.tenant ?? ''), el('td', {}, e.code ?? ''), el('td', {}, e.step ?? ''), el('td', { class: 'digest' }, (e.args_digest ?? '').slice(0, 19)))));
  const labels = data.chart.buckets.map((b) => time(b).slice(11, 16));
  const datasets = data.chart.series.map((s) => ({ label: s.label, data: s.data, backgroundColor: colour(s.label) }));
  const canvas = $('chart');
  canvas.dataset.total = String(data.total);
  canvas.dataset.series = JSON.stringify(data.chart.series);
  if (!window.Chart) return;
  if (chart) {
    chart.data.labels = labels;
    chart.data.datasets = datasets;
    chart.update();
  } else {
    chart = new window.Chart(canvas, {
      type: 'bar',
      data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }
}

document.addEventListener('DOMContentLoaded', async () => {
  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      signedIn(await api('POST', 'api/login', { token: $('token').value }));
      $('token').value = '';
    } catch (e) {
      $('signin-error').textContent = `${e.code}: ${e.message}`;
    }
  });
  $('logout').addEventListener('click', async () => {
    await api('POST', 'api/logout', {}).catch(() => {});
    location.reload();
  });
  $('refresh').addEventListener('click', () => { loadApprovals(); loadAudit(); });
  $('audit-filter').addEventListener('submit', (ev) => { ev.preventDefault(); loadAudit(); });
  try {
    signedIn(await api('GET', 'api/me'));
  } catch (e) {
    // Not signed in yet.
  }
});
