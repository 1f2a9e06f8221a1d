// targets.js: the targets page, as Prometheus' /targets: every scrape target from
// /api/v1/targets grouped by job (scrape pool), one row per endpoint and profile: endpoint,
// profile, health, labels, last scrape, its duration and the last error. Filters: unhealthy only,
// and a text that matches endpoint, profile or labels; each job folds. Refreshes every 10 s while
// shown (and on the Refresh button).

import { extLink } from './dom.js';
import { ago, count, duration, ensureCss, errorBox, getData, h, localTime, NEVER } from './pages.js';

const REFRESH_MS = 10000;

function labelChips(labels) {
  return h('span.pg-labels', Object.entries(labels || {}).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => h('span.pg-label', `${k}="${v}"`)));
}

function healthBadge(health) {
  return h(`span.pg-health.pg-${health === 'up' || health === 'down' ? health : 'unknown'}`, health || 'unknown');
}

function matches(t, text) {
  if (!text) return true;
  const hay = [t.scrapeUrl, t.profileName, t.health, t.lastError,
    ...Object.entries(t.labels || {}).map(([k, v]) => `${k}="${v}"`)].join(' ').toLowerCase();
  return text.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

function targetRow(t) {
  const never = !t.lastScrape || t.lastScrape === NEVER;
  return h('tr.pg-target', { dataset: { health: t.health || 'unknown', url: t.scrapeUrl } },
    h('td.pg-endpoint', extLink(t.scrapeUrl)),
    h('td.pg-profile', t.profileName || ''),
    h('td.pg-state', healthBadge(t.health)),
    h('td.pg-labelcell', labelChips(t.labels)),
    h('td.pg-num.pg-last', { title: never ? null : localTime(t.lastScrape), 'data-label': 'last scrape' }, ago(t.lastScrape)),
    h('td.pg-num.pg-dur', { 'data-label': 'took' }, never ? '–' : duration(t.lastScrapeDuration)),
    h('td.pg-error', t.lastError || ''));
}

function poolSection(pool, targets, open) {
  const up = targets.filter((t) => t.health === 'up').length;
  const details = h('details.pg-pool', { open: open ? true : null, dataset: { pool } },
    h('summary', h('span.pg-pool-name', pool), ' ',
      h(`span.pg-pool-count${up === targets.length ? '.pg-allup' : ''}`, `(${up}/${targets.length} up)`)),
    h('table.pg-table.pg-targets',
      h('thead', h('tr', ['Endpoint', 'Profile', 'State', 'Labels', 'Last scrape', 'Duration', 'Error']
        .map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', targets.map(targetRow))));
  return details;
}

function emptyTargets() {
  return h('div.empty', h('p', 'No scrape targets. Add a scrape job to the configuration file (--config), e.g.:'),
    h('pre.cmd', 'scrape_configs:\n  - job_name: api\n    static_configs:\n      - targets: ["127.0.0.1:6060"]'),
    h('p.hint', 'then reload it (POST /-/reload or SIGHUP). Profiles can also be pushed: see Graph.'));
}

export async function render(root, api) {
  ensureCss();
  const state = { unhealthy: false, text: '', closed: new Set(), data: null, error: null };
  const list = h('div.pg-pools', { 'aria-live': 'polite' });
  const summary = h('span.pg-summary');
  const updated = h('span.hint.pg-updated');
  const unhealthy = h('input', { type: 'checkbox', id: 'pg-unhealthy' });
  const filter = h('input.pg-filter', { type: 'search', placeholder: 'filter: endpoint, profile, labels',
    'aria-label': 'filter targets' });
  const refresh = h('button.pg-refresh', { type: 'button' }, 'Refresh');
  const page = h('div.pg-page.pg-targets-page',
    h('div.pg-head', h('h1', 'Targets'), summary,
      h('label.pg-check', unhealthy, ' unhealthy only'), filter, refresh, updated),
    list);
  root.append(page);

  const draw = () => {
    list.replaceChildren();
    if (state.error) { list.append(errorBox(state.error, 'targets')); return; }
    if (!state.data) return;
    const all = state.data.activeTargets || [];
    const up = all.filter((t) => t.health === 'up').length;
    summary.textContent = `${count(all.length)} targets, ${count(up)} up`;
    if (all.length === 0) { list.append(emptyTargets()); return; }
    const pools = new Map();
    for (const t of all) {
      if (state.unhealthy && t.health === 'up') continue;
      if (!matches(t, state.text)) continue;
      if (!pools.has(t.scrapePool)) pools.set(t.scrapePool, []);
      pools.get(t.scrapePool).push(t);
    }
    if (pools.size === 0) {
      list.append(h('p.empty', state.unhealthy && !state.text ? 'Every target is up.' : 'No target matches the filter.'));
      return;
    }
    for (const pool of [...pools.keys()].sort()) {
      const targets = pools.get(pool).sort((a, b) => a.scrapeUrl.localeCompare(b.scrapeUrl));
      const sec = poolSection(pool, targets, !state.closed.has(pool));
      sec.addEventListener('toggle', () => (sec.open ? state.closed.delete(pool) : state.closed.add(pool)));
      list.append(sec);
    }
  };

  let timer = null;
  const load = async () => {
    clearTimeout(timer);
    refresh.disabled = true;
    page.setAttribute('aria-busy', 'true');
    try {
      state.data = await getData(api, '/api/v1/targets');
      state.error = null;
      updated.textContent = `updated ${localTime(Date.now())}`;
    } catch (e) {
      state.error = e;
    } finally {
      refresh.disabled = false;
      page.setAttribute('aria-busy', 'false');
    }
    draw();
    if (page.isConnected) timer = setTimeout(() => { if (page.isConnected) load(); }, REFRESH_MS);
  };

  unhealthy.addEventListener('change', () => { state.unhealthy = unhealthy.checked; draw(); });
  filter.addEventListener('input', () => { state.text = filter.value.trim(); draw(); });
  refresh.addEventListener('click', () => load());
  await load();
}
