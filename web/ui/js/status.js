// status.js: the status page: build information (/api/v1/status/buildinfo), runtime
// (/api/v1/status/runtimeinfo), storage and series counts (/api/v1/status/tsdb: what the store
// holds, series per profile type, label cardinality), the build ids whose native frames were stored
// without symbols and how many samples they hold (/api/v1/status/symbols), the command-line flags
// (/api/v1/status/flags, filterable), the forwarding endpoints (/api/v1/status/forward) and the
// configuration file (/api/v1/status/config). Each section loads on its own and shows its own error.

import { bytes, count, duration, ensureCss, getData, h, kvTable, loadingSection, localTime } from './pages.js';

function buildInfo(body, b) {
  body.append(kvTable([
    ['Version', b.version, 'version'], ['Revision', b.revision, 'revision'], ['Branch', b.branch, 'branch'],
    ['Build user', b.buildUser, 'buildUser'], ['Build date', b.buildDate, 'buildDate'],
    ['Compiler', b.goVersion, 'compiler'],
  ]));
}

function runtimeInfo(body, r) {
  const up = (Date.now() - Date.parse(r.startTime)) / 1000;
  body.append(kvTable([
    ['Start time', `${localTime(r.startTime)} (up ${duration(up)})`, 'startTime'],
    ['Working directory', r.CWD, 'cwd'],
    ['Configuration reload', r.reloadConfigSuccess ? 'successful' : 'failed', 'reload'],
    ['Last configuration load', localTime(r.lastConfigTime), 'lastConfigTime'],
    ['Threads', count(r.goroutineCount), 'threads'],
    ['Retention', r.storageRetention, 'retention'],
    ['Corruptions', count(r.corruptionCount), 'corruptions'],
  ]));
}

function bars(rows, what, unit = count) {
  if (!rows.length) return h('p.hint', `no ${what}`);
  const max = Math.max(...rows.map((r) => r.value), 1);
  return h('table.pg-table.pg-bars', { dataset: { what } },
    h('thead', h('tr', h('th', { scope: 'col' }, what), h('th.pg-num', { scope: 'col' }, 'count'), h('th', ''))),
    h('tbody', rows.map((r) => h('tr', { dataset: { name: r.name } },
      h('td.pg-mono', r.name), h('td.pg-num', unit(r.value)),
      h('td.pg-barcell', h('div.pg-bar', { style: `width:${(100 * r.value / max).toFixed(1)}%` }))))));
}

function storage(body, t) {
  const s = t.storage || {}, hs = t.headStats || {};
  const range = hs.minTime || hs.maxTime
    ? `${localTime(hs.minTime)} – ${localTime(hs.maxTime)}` : 'no profiles stored';
  body.append(
    h('div.pg-grid',
      kvTable([
        ['Series', count(hs.numSeries), 'numSeries'],
        ['Profile series', count(s.profileSeries), 'profileSeries'],
        ['Float series', count(s.floatSeries), 'floatSeries'],
        ['Label pairs', count(hs.numLabelPairs), 'numLabelPairs'],
        ['Profiles stored from – to', range, 'timeRange'],
      ]),
      kvTable([
        ['Head records (not yet compacted)', count(s.headRecords), 'headRecords'],
        ['Profile chunks', count(s.chunks), 'chunks'],
        ['Float heads / chunks', `${count(s.floatHeads)} / ${count(s.floatChunks)}`, 'floatChunks'],
        ['Stack tree nodes', count(s.stackNodes), 'stackNodes'],
        ['Strings / functions / locations / mappings',
          `${count(s.strings)} / ${count(s.functions)} / ${count(s.locations)} / ${count(s.mappings)}`, 'symbols'],
        ['Data file (used)', `${bytes(s.fileBytes)} (${bytes(s.usedBytes)})`, 'fileBytes'],
      ])),
    h('div.pg-grid',
      h('div', h('h3', 'Series by profile type'), bars(t.seriesCountByMetricName || [], 'profile type')),
      h('div', h('h3', 'Values by label name'), bars(t.labelValueCountByLabelName || [], 'label'))),
    h('div.pg-grid',
      h('div', h('h3', 'Series by label pair'), bars(t.seriesCountByLabelValuePair || [], 'label pair')),
      h('div', h('h3', 'Bytes of values by label name'), bars(t.memoryInBytesByLabelName || [], 'label bytes', bytes))));
}

// a profile type's total in its unit (name:type:unit:...): nanoseconds as a duration, bytes as bytes
function typedTotal(type, total) {
  const unit = type.split(':')[2];
  if (unit === 'nanoseconds') return duration(total / 1e9);
  if (unit === 'bytes') return bytes(total);
  return count(total);
}

// the build ids missing symbols, by samples: what an eBPF profiler's user asks first
function symbols(body, d) {
  const miss = d.missing || {}, avail = d.available || {};
  body.append(kvTable([
    ['Build ids missing symbols (samples)', `${count(miss.buildIds)} (${count(miss.samples)})`, 'missing'],
    ['Build ids with symbols now (samples)', `${count(avail.buildIds)} (${count(avail.samples)})`, 'available'],
  ]));
  const rows = d.buildIds || [];
  if (!rows.length) {
    body.append(h('p.hint', 'No build id is missing symbols.'));
    return;
  }
  const cols = ['Build id', 'File', 'Samples', 'Profiles', 'Values', 'Last seen'];
  body.append(h('table.pg-table.pg-symbols',
    h('thead', h('tr', cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', rows.map((e) => h('tr', { dataset: { buildId: e.buildId } },
      h('td.pg-mono', e.buildId), h('td.pg-mono', (e.files || []).join(', ') || '–'),
      h('td.pg-num', count(e.samples)), h('td.pg-num', count(e.profiles)),
      h('td.pg-mono', (e.values || []).map((v) => h('div', { dataset: { type: v.type, total: v.total } },
        `${v.type}: ${typedTotal(v.type, v.total)}`))),
      h('td', { title: `first seen ${localTime(e.firstSeen)}` }, localTime(e.lastSeen)))))));
  if (miss.buildIds > rows.length) body.append(h('p.hint', `the ${rows.length} with the most samples of ${count(miss.buildIds)}`));
}

function flags(body, f) {
  const input = h('input.pg-filter', { type: 'search', placeholder: 'filter flags', 'aria-label': 'filter flags' });
  const rows = Object.entries(f).sort(([a], [b]) => a.localeCompare(b));
  const tbody = h('tbody');
  const draw = () => {
    const q = input.value.trim().toLowerCase();
    tbody.replaceChildren(...rows.filter(([k, v]) => !q || k.toLowerCase().includes(q) || String(v).toLowerCase().includes(q))
      .map(([k, v]) => h('tr', { dataset: { flag: k } }, h('td.pg-mono', `--${k}`), h('td.pg-mono', v))));
  };
  input.addEventListener('input', draw);
  draw();
  body.append(input, h('table.pg-table.pg-flags',
    h('thead', h('tr', h('th', { scope: 'col' }, 'Flag'), h('th', { scope: 'col' }, 'Value'))), tbody));
}

function forward(body, eps) {
  if (!eps.length) {
    body.append(h('p.hint', 'No forward: endpoints in the configuration: nothing is forwarded.'));
    return;
  }
  const cols = ['Endpoint', 'Protocol', 'Sent', 'Pending', 'Lag', 'Retried', 'Dropped', 'Last error'];
  body.append(h('table.pg-table.pg-forward',
    h('thead', h('tr', cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', eps.map((e) => h('tr', { dataset: { endpoint: e.name } },
      h('td.pg-mono', { title: e.url }, e.name), h('td', e.protocol), h('td.pg-num', count(e.sent)),
      h('td.pg-num', count(e.pending)), h('td.pg-num', duration(e.lagSeconds)), h('td.pg-num', count(e.retried)),
      h('td.pg-num', count(e.dropped)),
      h('td.pg-mono', e.lastError ? `${e.lastError} (${localTime(e.lastErrorTime)})` : '–'))))));
}

function config(body, c) {
  body.append(c.yaml ? h('details.pg-config', h('summary', 'configuration file as loaded'), h('pre.pg-yaml', c.yaml))
    : h('p.hint', 'No configuration file (--config): nothing is scraped; profiles are pushed.'));
}

export async function render(root, api) {
  ensureCss();
  const get = (path) => () => getData(api, path);
  const sections = [
    loadingSection('Build information', get('/api/v1/status/buildinfo'), buildInfo, { id: 'pg-build' }),
    loadingSection('Runtime', get('/api/v1/status/runtimeinfo'), runtimeInfo, { id: 'pg-runtime' }),
    loadingSection('Storage', get('/api/v1/status/tsdb'), storage, { id: 'pg-storage' }),
    loadingSection('Symbols', () => getData(api, '/api/v1/status/symbols', { limit: 20 }), symbols, { id: 'pg-symbols' }),
    loadingSection('Forwarding', get('/api/v1/status/forward'), forward, { id: 'pg-forward' }),
    loadingSection('Command-line flags', get('/api/v1/status/flags'), flags, { id: 'pg-flags' }),
    loadingSection('Configuration', get('/api/v1/status/config'), config, { id: 'pg-config' }),
  ];
  const page = h('div.pg-page.pg-status-page', { 'aria-busy': 'true' }, h('div.pg-head', h('h1', 'Status')),
    h('div.pg-grid', sections[0], sections[1]), sections.slice(2));
  root.append(page);
  await Promise.all(sections.map((s) => s.ready));
  page.setAttribute('aria-busy', 'false');
}
