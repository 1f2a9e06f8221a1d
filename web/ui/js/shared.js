// shared.js: shared (ad hoc) profiles, files uploaded by hand (adhocprofiles.v1, docs/api.md "Ad hoc
// profiles"). The upload page (/upload): a file picker and a drop zone for a pprof, flamebearer JSON,
// perf script or folded file (gzipped or not), sent to Upload, then the shared view of it; the list of shared profiles, two of
// which can be diffed. The shared view (/shared?id=…[&compare=…][&st=…]): the graph view's panel
// (flame graph, top table, sandwich; the frame menu's filters as chips and the line view, in the URL)
// over /api/v1/profiles/adhoc, a sample type picker, and a
// share button that copies the link (the view is all in it), for anyone with the read scope.

import { ApiError, api } from './api.js';
import * as state from './state.js';
import { h, clear, errorBox, fmtTime } from './dom.js';
import { ensureCss } from './pages.js';
import { ProfilePanel } from './panel.js';
import { FILTERS, filterParams } from './focus.js';

const SVC = '/adhocprofiles.v1.AdHocProfileService/';

// a Connect JSON call; its error JSON's message becomes the ApiError's
export async function connect(method, body) {
  let res;
  try {
    res = await fetch(SVC + method, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(`cannot reach the server: ${e.message}`, 0, SVC + method);
  }
  const text = await res.text();
  let j = null;
  try { j = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new ApiError((j && j.message) || text.trim() || `${res.status} ${res.statusText}`, res.status, SVC + method);
  return j;
}

function base64(buf) {
  const b = new Uint8Array(buf);
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
  return btoa(s);
}

// ---- the upload page ----

export async function render(root) {
  ensureCss();
  const msg = h('div.adhoc-msg', { role: 'status', 'aria-live': 'polite' });
  const input = h('input#adhoc-file', { type: 'file', on: { change: () => { if (input.files[0]) send(input.files[0]); } } });
  // the zone takes drops and mouse clicks; keyboard users reach the file input itself (Tab)
  const drop = h('div.dropzone', {
    role: 'group', 'aria-label': 'upload a profile file', 'aria-describedby': 'adhoc-help',
    on: {
      click: (e) => { if (!e.target.closest('label, input')) input.click(); },
      dragover: (e) => { e.preventDefault(); drop.classList.add('over'); },
      dragleave: () => drop.classList.remove('over'),
      drop: (e) => { e.preventDefault(); drop.classList.remove('over'); const f = e.dataTransfer.files[0]; if (f) send(f); },
    },
  }, h('strong', 'Drop a profile file here'), ' or ', h('label', { for: 'adhoc-file' }, 'choose one: '), input);
  const list = h('div.adhoc-list');
  root.append(h('section.pg-section',
    h('h2', 'Upload a profile to share'),
    h('p.hint#adhoc-help', 'A pprof file (as go tool pprof reads it), a flamebearer JSON export (Pyroscope\'s, or profstore\'s /pyroscope/render), ',
      'perf script output (perf record -g, then perf script) or folded stacks ("a;b;c 12" lines); gzipped or not. ',
      'It is kept on this server under a new id; its link opens the same flame graph and top table for anyone who may read this profstore.'),
    drop, msg),
  h('section.pg-section', h('h2', 'Shared profiles'), list));

  async function send(file) {
    clear(msg).append(`uploading ${file.name}…`);
    try {
      const r = await connect('Upload', { name: file.name, profile: base64(await file.arrayBuffer()) });
      state.go('shared', { id: r.id });
    } catch (e) {
      clear(msg).append(errorBox(e, `upload of ${file.name}`));
    }
  }

  try {
    const r = await connect('List', {});
    const profiles = r.profiles || [];
    if (!profiles.length) { list.append(h('p.hint', 'none yet')); return; }
    const picks = [];
    const diffBtn = h('button.adhoc-diff', {
      type: 'button', disabled: true,
      on: { click: () => state.go('shared', { id: picks[0], compare: picks[1] }) },
    }, 'diff the two checked (first = baseline)');
    const rows = profiles.map((p) => {
      const box = h('input', {
        type: 'checkbox', 'aria-label': `compare ${p.name}`,
        on: {
          change: () => {
            const i = picks.indexOf(p.id);
            if (box.checked && i < 0) picks.push(p.id);
            if (!box.checked && i >= 0) picks.splice(i, 1);
            diffBtn.disabled = picks.length !== 2;
          },
        },
      });
      return h('tr', { dataset: { id: p.id } }, h('td', box),
        h('td', h('a', { href: state.link({ view: 'shared', id: p.id }) }, p.name || p.id)),
        h('td.pg-mono', p.id), h('td', fmtTime(Number(p.uploadedAt) / 1000)));
    });
    list.append(h('table.pg-table.adhoc-table',
      h('thead', h('tr', h('th', { scope: 'col' }, 'diff'), h('th', { scope: 'col' }, 'name'), h('th', { scope: 'col' }, 'id'),
        h('th', { scope: 'col' }, 'uploaded'))),
      h('tbody', rows)), diffBtn);
  } catch (e) {
    list.append(errorBox(e, 'shared profiles'));
  }
}

// ---- the shared view ----

// the panel's api: every format of one shared profile (or a diff of two) from /api/v1/profiles/adhoc
const adhocApi = {
  profile: (params, o) => api.get('/api/v1/profiles/adhoc', params, o),
  diff: (params, o) => api.get('/api/v1/profiles/adhoc', params, o),
  url: (_path, params) => api.url('/api/v1/profiles/adhoc', params),
};

export class SharedView {
  constructor(root) {
    ensureCss();
    this.root = root;
    this.head = h('div.adhoc-head');
    this.err = h('div.view-msg');
    root.append(this.head, this.err);
    this.key = null;
  }

  async update(s) {
    const key = JSON.stringify([s.id, s.compare, s.st, ...FILTERS.map((k) => s[k] || '')]);
    if (key !== this.key) {
      this.key = key;
      await this.load(s);
    }
    if (this.panel) this.panel.apply(s);
  }

  async load(s) {
    clear(this.head);
    clear(this.err);
    if (this.panel) { this.panel.destroy(); this.panel = null; }
    if (!s.id) { this.err.append(h('p.hint', 'No shared profile named: upload one, or open a shared link.')); return; }
    const diff = !!s.compare;
    let meta;
    let other = null;
    try {
      meta = await connect('Get', { id: s.id, maxNodes: 1 });
      if (diff) other = await connect('Get', { id: s.compare, maxNodes: 1 });
    } catch (e) {
      this.err.append(errorBox(e, 'shared profile'));
      return;
    }
    const types = (meta.profileTypes || []).filter((t) => !other || (other.profileTypes || []).includes(t));
    const st = s.st && types.includes(s.st) ? s.st : types[0] || meta.profileType;
    const picker = h('select.adhoc-type', {
      'aria-label': 'sample type',
      on: { change: () => state.set({ st: picker.value, zoom: null, fn: null }) },
    }, types.map((t) => h('option', { value: t, selected: t === st }, t)));
    const linkOut = h('input.adhoc-link', { type: 'text', readonly: true, 'aria-label': 'link to this view', hidden: true });
    const shareBtn = h('button.adhoc-share', {
      type: 'button', title: 'copy the link of this view',
      on: {
        click: async () => {
          linkOut.value = location.href;
          linkOut.hidden = false;
          linkOut.select();
          try { await navigator.clipboard.writeText(location.href); shareBtn.textContent = 'link copied'; } catch (_) { shareBtn.textContent = 'copy the link'; }
        },
      },
    }, 'Share');
    const title = diff
      ? [h('strong', other.name || s.compare), ' compared with ', h('strong', meta.name || s.id)]
      : [h('strong', meta.name || s.id), ` uploaded ${fmtTime(Number(meta.uploadedAt) / 1000)}`];
    this.head.append(h('h2.adhoc-title', title), h('label', 'sample type ', picker), ' ', shareBtn, ' ', linkOut);
    this.panel = new ProfilePanel(this.root, {
      diff,
      onState: (patch, push) => state.set(patch, { push }),
      empty: () => h('p.hint.noprof', 'This profile has no samples of this type.'),
      filters: true,
    });
    const params = { ...(diff ? { id: s.id, compare: s.compare, type: st } : { id: s.id, type: st }), ...filterParams(s) };
    try {
      await this.panel.load(adhocApi, diff ? 'diff' : 'query', params, { sampleUnit: unitOf(st) });
    } catch (_) { /* shown in the panel */ }
  }

  destroy() { if (this.panel) this.panel.destroy(); }
}

// the unit of a sample type's values (Get answers Pyroscope's flamebearer units, "samples" for cpu):
// by the names Go and the SDKs give them
function unitOf(st) {
  return st === 'cpu' || st === 'wall' ? 'nanoseconds' : /space|bytes/.test(st) ? 'bytes' : 'count';
}
