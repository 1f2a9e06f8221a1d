// main.js: the UI's entry point and router. The path picks the view (/graph, the default for /,
// /compare, /targets, /status, /upload, /shared); the rest of the view state is in the query string (state.js).
// Graph view: query bar, service list, totals over time, the profile panel of the selection,
// label breakdown.
// Compare view: two query bars, both profiles side by side, their diff and its largest changes.
// Upload and Shared (shared.js): a profile file uploaded by hand, and the view its link opens.

import * as state from './state.js';
import { api } from './api.js';
import { h, clear, errorBox, emptyState, fmtTime, formatValue, isTimeUnit } from './dom.js';
import { QueryBar } from './query.js';
import { TimeGraph, matchers } from './graph.js';
import { ProfilePanel } from './panel.js';
import { FILTERS, filterParams } from './focus.js';
import { Breakdown } from './breakdown.js';
import { ServiceList } from './services.js';
import { groupTypes, selectorOf } from './types.js';
import { SharedView, render as renderUpload } from './shared.js';
import { Heatmap } from './heatmap.js';
import { ensureCss } from './pages.js';
import { init as initSettings } from './settings.js';

// types: the picker's entries (types.js groupTypes), storedTypes: the ids the server listed
const app = { types: null, storedTypes: null, view: null, viewName: null };
window.psApp = app; // for the browser tests and the console

function defaultType() {
  const t = app.types.find((x) => x.sample_type === 'cpu' && x.delta) || app.types.find((x) => x.sample_type === 'cpu') || app.types[0];
  return t.id;
}

// the entry of a type id (any id it merges)
function typeInfo(id) { return (app.types || []).find((t) => t.id === id || t.ids.includes(id)) || null; }

// the state's type as a picker entry's id: false (and the URL corrected) when it was not one
function checkType(s) {
  const info = s.type && typeInfo(s.type);
  if (info && info.id === s.type) return true;
  state.set({ type: info ? info.id : defaultType() }, { push: false });
  return false;
}

// what the selector has in the range when the chosen type has nothing: the other entries with
// data for it, as buttons that switch the type (a non-empty store: no "push some" hint)
async function nothingHere(el, s, p, r, onType) {
  const sel = (s[p + 'sel'] || '').trim();
  const info = typeInfo(s.type);
  const box = h('div.empty.nodata', h('p', `No profiles of ${info ? info.label : s.type}${sel ? ` match {${sel}}` : ''} in this range.`));
  el.append(box);
  let names = [];
  try {
    names = await api.labelValuesIn('__name__', selectorOf(app.types.flatMap((t) => t.ids), sel).text, r.start, r.end);
  } catch (_) { /* the query's own error is shown */ }
  const others = app.types.filter((t) => t !== info && t.ids.some((id) => names.includes(id)));
  if (others.length) {
    box.append(h('p', `${sel ? 'This selector' : 'The range'} has profiles of:`),
      h('p.other-types', others.map((t) => h('button.other-type', { type: 'button', dataset: { type: t.id }, on: { click: () => onType(t.id) } }, t.label))));
  } else {
    box.append(h('p.hint', sel ? 'Nothing in this range matches the selector in any profile type: widen the range or change the selector.'
      : 'Nothing stored in this range: widen the range.'));
  }
}

function panelPatch(patch, push) { state.set(patch, { push }); }

// the window of the selection (or the whole range) as profiles/query parameters; p = key prefix
function windowOf(s, r, p = '') {
  if (s[p + 'sfrom'] && s[p + 'sto']) {
    const a = Number(s[p + 'sfrom']), b = Number(s[p + 'sto']);
    if (a === b) return { start: a.toFixed(3), end: (a + 0.000999).toFixed(6), point: true, at: a };
    return { start: a.toFixed(3), end: b.toFixed(3), point: false };
  }
  return { start: String(r.start), end: String(r.end), point: false };
}

// CPU as cores (cpu=cores, a time type): the seconds of the window w ({start, end}) the panel's
// values are divided by, as the graph divides each step's; 0 (values as they are) otherwise, and
// for one profile (a point)
function coresOf(s, info, w) {
  if (s.cpu !== 'cores' || !info || !isTimeUnit(info.sample_unit) || w.point) return 0;
  const secs = Number(w.end) - Number(w.start);
  return secs > 0 ? secs : 0;
}

// a point selection with its profile's id: the panel shows that profile by id
function byId(s) { return Boolean(s.pid && s.sfrom && s.sfrom === s.sto); }

// a heatmap cell: its window's profiles with totals in [tmin, tmax] (tmax absent: no bound)
function isCell(s) { return Boolean(s.tmin && s.sfrom && s.sto); }
const NO_CELL = { tmin: null, tmax: null };

function joinSel(...parts) { return parts.map((p) => (p || '').trim()).filter(Boolean).join(', '); }

class GraphView {
  constructor(root) {
    this.root = root;
    this.bar = new QueryBar(root, { api, types: app.types, refresh: true, onRun: (p) => this.run(p), onTick: () => this.update(state.get(), null, true) });
    this.services = new ServiceList(root, {
      api, groups: app.types,
      onPick: ({ type, sel }) => this.run({ type, sel }),
    });
    this.err = h('div.view-msg');
    this.selInfo = h('div.selinfo');
    root.append(this.err);
    this.graph = new TimeGraph(root, { onSelect: (sel) => this.select(sel) });
    this.heatBox = h('div.heatwrap');
    root.append(this.heatBox, this.selInfo);
    this.panel = new ProfilePanel(root, {
      onState: panelPatch,
      empty: () => h('p.hint.noprof', 'No profiles in the selection.'),
      explain: (e) => this.bar.explain(e, 'profile'),
      filters: true,
    });
    this.breakdown = new Breakdown(root, {
      onPick: (label) => state.set({ bd: label }),
      onNarrow: (label, value) => {
        const s = state.get();
        const m = value === null ? `${label}=""` : `${label}=${JSON.stringify(value)}`;
        state.set({ sel: joinSel(s.sel, m), sfrom: null, sto: null, ssel: null, pid: null, zoom: null });
      },
    });
  }

  run(patch) {
    if (!state.set({ ...patch, ...NO_CELL, sfrom: null, sto: null, ssel: null, pid: null, zoom: null, fn: null })) this.update(state.get(), null, true);
  }

  // the heatmap (hm=1) of the graph's range: a cell merges its profiles (sfrom/sto its window,
  // tmin/tmax its totals)
  showHeatmap(s, info, reload) {
    if (s.hm !== '1') {
      if (this.heat) { this.heat.destroy(); this.heat = null; }
      return;
    }
    if (!this.heat) {
      this.heat = new Heatmap(this.heatBox, {
        plotBox: () => {
          const u = this.graph.u;
          if (!u) return null;
          const o = u.over.getBoundingClientRect(), e = this.heatBox.getBoundingClientRect();
          return { left: o.left - e.left, width: o.width };
        },
        onCell: (c) => state.set({ sfrom: c.from, sto: c.to, tmin: String(c.lo), tmax: c.hi === null ? null : String(c.hi), ssel: null, pid: null, zoom: null }),
      });
      reload = true;
    }
    if (reload) {
      this.heatP = this.heat.load({ type: info.id, sel: s.sel, start: this.r.start, end: this.r.end, sampleUnit: info.sample_unit })
        .then(() => {
          if (info.ids.length > 1) this.heat.note.append(` Of ${info.id} only (the heatmap takes one of the ${info.ids.length} merged types).`);
          const now = state.get();
          this.heat.setSelection(isCell(now) ? { from: now.sfrom, lo: now.tmin } : null);
          if (isCell(now)) this.showSelection(now, info);
        })
        .catch((e) => { clear(this.heat.note).append(errorBox(e, 'heatmap')); });
    }
    this.heat.setSelection(isCell(s) ? { from: s.sfrom, lo: s.tmin } : null);
  }

  // a graph selection: a clicked point is one profile, shown by its id (pid in the URL)
  async select(sel) {
    const pid = sel.ssel !== null && sel.sfrom === sel.sto ? await this.pointId(sel) : null;
    state.set({ ...sel, ...NO_CELL, pid, zoom: null });
  }

  // the id of the profile of a point (its series, its ms): the largest if several; null if none
  async pointId(sel) {
    const s = state.get(), a = Number(sel.sfrom);
    try {
      const list = await api.profileIds(state.selector(s.type, joinSel(s.sel, sel.ssel)), a.toFixed(3), (a + 0.000999).toFixed(6));
      let best = null;
      for (const p of list) if (!best || p.total > best.total) best = p;
      return best ? best.id : null;
    } catch (_) { return null; } /* shown by time then */
  }

  async update(s, prev, force = false) {
    if (!checkType(s)) return;
    this.bar.update(s);
    if (force || state.changed(s, prev, ['range', 'from', 'to']) || !this.servicesLoaded) {
      this.servicesLoaded = true;
      this.servicesP = this.services.load(state.timeRange(s));
    }
    this.services.mark(s);
    const qk = ['type', 'sel', 'range', 'from', 'to', 'by', 'cpu'];
    const fk = qk.concat(['sfrom', 'sto', 'ssel', 'pid', 'tmin', 'tmax'], FILTERS);
    const info = typeInfo(s.type);
    const reloadHeat = force || state.changed(s, prev, qk) || !this.r;
    if (force || state.changed(s, prev, qk) || !this.r) {
      this.r = state.timeRange(s);
      clear(this.err);
      this.graph.setSelection(null);
      this.selInfo.hidden = false;
      this.graphP = this.graph.load(api, { type: s.type, sel: s.sel, by: s.by, start: this.r.start, end: this.r.end, typeInfo: info, cores: s.cpu === 'cores' })
        .then((n) => {
          if (this.heat) this.heat.draw(); // its columns under the graph's time axis
          if (n) return null;
          this.selInfo.hidden = true;
          return nothingHere(this.err, s, '', this.r, (type) => this.run({ type }));
        })
        .catch((e) => { this.selInfo.hidden = true; this.graph.clear(); this.err.append(this.bar.explain(e, 'query') || errorBox(e, 'query')); });
    }
    this.graph.setSelection(s.sfrom && s.sto ? s : null);
    this.showHeatmap(s, info, reloadHeat);
    this.showSelection(s, info);
    if (force || state.changed(s, prev, fk)) this.loadProfile(s, info);
    else if (state.changed(s, prev, ['bd'])) this.loadBreakdown(s, info);
    this.panel.apply(s);
  }

  showSelection(s, info) {
    clear(this.selInfo);
    const heatBtn = h('button.heattoggle', {
      type: 'button', 'aria-pressed': String(s.hm === '1'), title: 'the individual profiles as a heatmap: time × total, colour = how many',
      on: { click: () => state.set({ hm: s.hm === '1' ? null : '1', ...(isCell(s) ? { ...NO_CELL, sfrom: null, sto: null } : {}) }) },
    }, s.hm === '1' ? 'hide heatmap' : 'heatmap');
    if (!(s.sfrom && s.sto)) {
      this.selInfo.append(h('span', 'Showing every profile of the range merged. Click a point for one profile, drag over the graph for a range.'), ' ', heatBtn);
      return;
    }
    if (isCell(s)) {
      const hi = s.tmax ? formatValue(Number(s.tmax), info.sample_unit) : 'the largest';
      const cell = this.heat && this.heat.selectedCell();
      const ex = cell && cell.exemplar;
      this.selInfo.append(h('span', 'Selection: ', h('strong.cellsel', `the profiles of ${fmtTime(Number(s.sfrom))} – ${fmtTime(Math.floor(Number(s.sto)))} with totals ${formatValue(Number(s.tmin), info.sample_unit)} – ${hi} merged`),
        cell ? ` (${cell.count} profile${cell.count > 1 ? 's' : ''})` : ''), ' ',
      ex && ex.id ? h('button.openlargest', {
        type: 'button', title: 'open the largest profile of this cell on its own (Back returns to the cell)',
        on: { click: () => { const t = ex.time.toFixed(3); state.set({ ...NO_CELL, sfrom: t, sto: t, ssel: matchers(ex.labels), pid: ex.id, zoom: null }); } },
      }, 'open its largest profile') : null, ' ',
      h('button.clear', { type: 'button', on: { click: () => state.set({ ...NO_CELL, sfrom: null, sto: null, ssel: null, pid: null, zoom: null }) } }, 'clear selection'), ' ', heatBtn);
      return;
    }
    const a = Number(s.sfrom), b = Number(s.sto);
    const what = a === b
      ? `the profile of {${s.ssel || ''}} at ${fmtTime(a)}`
      : `${s.ssel ? `{${s.ssel}} ` : ''}${fmtTime(a)} – ${fmtTime(b)} merged`;
    const pid = byId(s) ? [' ', h('span.pid', 'id ', h('code', s.pid))] : [];
    const range = { range: s.range, from: s.from, to: s.to };
    const sides = {};
    for (const p of ['b', 'c']) Object.assign(sides, { [p + 'sel']: s.sel, [p + 'range']: range.range, [p + 'from']: range.from, [p + 'to']: range.to });
    this.selInfo.append(h('span', 'Selection: ', h('strong', what), ...pid), ' ',
      h('button.clear', { type: 'button', on: { click: () => state.set({ sfrom: null, sto: null, ssel: null, pid: null, zoom: null }) } }, 'clear selection'), ' ',
      heatBtn, ' ',
      h('button.tocompare', {
        type: 'button', title: 'open Compare with this selection as the baseline; drag the comparison on its graph',
        on: { click: () => state.go('compare', { type: s.type, ...sides, bsfrom: s.sfrom, bsto: s.sto, bssel: s.ssel }) },
      }, 'compare with…'));
    void info;
  }

  async loadProfile(s, info) {
    const w = windowOf(s, this.r);
    const params = { query: state.selector(s.type, joinSel(s.sel, s.ssel)), start: w.start, end: w.end, ...filterParams(s) };
    // a cell: the heatmap's type (a picker entry's first id: SelectHeatmap takes one), its window and totals
    if (isCell(s)) Object.assign(params, { query: selectorOf([info.id], s.sel).text, start: s.sfrom, end: s.sto, total_min: s.tmin, total_max: s.tmax });
    this.loadBreakdown(s, info);
    try {
      if (byId(s)) await this.panel.load(api, 'id', { id: s.pid, ...filterParams(s) }, { sampleUnit: info.sample_unit });
      else await this.panel.load(api, 'query', params, { sampleUnit: info.sample_unit, perSecond: coresOf(s, info, w) });
      if (!app.firstFlameMs) app.firstFlameMs = performance.now();
    } catch (_) { /* shown in the panel */ }
  }

  async loadBreakdown(s, info) {
    const w = windowOf(s, this.r);
    let names = [];
    try { names = (await api.labels(state.selector(s.type, s.sel))).filter((n) => n !== '__name__'); } catch (_) { /* the graph shows it */ }
    await this.breakdown.load(api, {
      type: s.type, sel: joinSel(s.sel, s.ssel), label: s.bd || '', names,
      start: Number(w.start), end: w.point ? w.at : Number(w.end), point: w.point, sampleUnit: info.sample_unit,
      perSecond: coresOf(s, info, w),
      aggregation: info.aggregation,
    });
  }

  destroy() { this.graph.destroy(); if (this.heat) this.heat.destroy(); }
}

// the baseline shifts of Compare's "a day / a week earlier" (boff), in seconds
const OFFSETS = { '1d': 86400, '7d': 604800 };

// a selector's matchers without those on label name (a top-level split on commas outside quotes)
function dropLabel(sel, name) {
  const parts = [];
  let cur = '', q = false;
  for (let i = 0; i < (sel || '').length; i++) {
    const ch = sel[i];
    if (q && ch === '\\') { cur += ch + (sel[i + 1] || ''); i++; continue; }
    if (ch === '"' || ch === "'" || ch === '`') q = q === ch ? false : q || ch;
    if (ch === ',' && !q) { parts.push(cur); cur = ''; } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p && !new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*(=|!=|=~|!~)`).test(p)).join(', ');
}

class CompareView {
  constructor(root) {
    this.root = root;
    ensureCss('/ui/css/heat.css');
    this.bars = h('div.compare-bars');
    root.append(this.bars);
    this.base = new QueryBar(this.bars, { api, types: app.types, prefix: 'b', title: 'Baseline', showBy: false, refresh: true, onRun: (p) => this.run(p, 'b'), onTick: () => this.update(state.get(), null, true) });
    this.cmp = new QueryBar(this.bars, { api, types: app.types, prefix: 'c', title: 'Comparison', showType: false, showBy: false, onRun: (p) => this.run(p, 'c') });
    this.quick = this.quickBar();
    root.append(this.quick);
    this.err = h('div.view-msg');
    root.append(this.err);
    const sides = h('div.sides');
    // each side: its totals graph (drag = that side's window, click = one profile) over its panel
    const side = (p, title) => {
      const col = h('div.side');
      sides.append(col);
      const graph = new TimeGraph(col, { height: 110, onSelect: (sel) => state.set({ [p + 'sfrom']: sel.sfrom, [p + 'sto']: sel.sto, [p + 'ssel']: sel.ssel, [p + 'zoom']: null, zoom: null }) });
      const sel = h('div.selinfo');
      col.append(sel);
      const panel = new ProfilePanel(col, {
        onState: panelPatch, modes: false, title, filters: 'menu', keys: { zoom: p + 'zoom', q: 'q', inv: 'inv', fn: 'fn', mode: p + 'mode' },
        empty: () => h('p.hint.noprof', 'No profiles in this window.'), explain: (e) => this.explain(e, 'profile'),
      });
      return { graph, sel, panel };
    };
    this.bs = side('b', 'Baseline');
    this.cs = side('c', 'Comparison');
    this.left = this.bs.panel;
    this.right = this.cs.panel;
    // the diff's measure (normalize): rates per second of profiled time, or absolute values;
    // absent, the server's default (rates when the windows differ in length); the buttons show the
    // one the answer used
    this.normBtns = {};
    const NORMS = { rate: 'rates (per second of profiled time)', none: 'absolute values' };
    this.normNote = h('span.normnote');
    this.normBar = h('div.normbar', h('span', 'Diff compares '),
      h('span.modes', { role: 'radiogroup', 'aria-label': 'diff measure' }, Object.entries(NORMS).map(([m, label]) => {
        const b = h('button.mode', { type: 'button', role: 'radio', dataset: { norm: m }, 'aria-checked': 'false', on: { click: () => state.set({ norm: m }) } }, label);
        this.normBtns[m] = b;
        return b;
      })), ' ', this.normNote);
    root.append(this.normBar);
    this.diff = new ProfilePanel(root, {
      onState: panelPatch, diff: true, title: 'Diff (comparison − baseline)', filters: true,
      empty: () => h('p.hint.noprof', 'Neither side has profiles.'), explain: (e) => this.explain(e, 'diff'),
    });
    // the diff first (what changed), the two sides below it, small
    root.append(h('h3.sides-title', 'The two sides'), sides);
  }

  // one click: the comparison against the same selector and range a day or a week earlier (boff:
  // the baseline's range is the comparison's shifted), or by label: one label's two values over
  // the comparison's range (bsel, csel)
  quickBar() {
    const shift = (off) => {
      const s = state.get();
      this.run({ bsel: s.csel || '', boff: off, brange: null, bfrom: null, bto: null }, 'quick');
    };
    this.offNote = h('span.offnote');
    this.labelSel = h('select.bylabel-name', { 'aria-label': 'label to compare by', on: { change: () => this.loadValues() } });
    this.valA = h('select.bylabel-a', { 'aria-label': 'baseline value' });
    this.valB = h('select.bylabel-b', { 'aria-label': 'comparison value' });
    const byLabel = h('span.bylabel', 'compare by label ', this.labelSel, ' = ', this.valA, ' vs ', this.valB, ' ',
      h('button.bylabel-go', { type: 'button', on: { click: () => this.byLabel() } }, 'compare'));
    return h('div.quickbar',
      h('span', 'Comparison vs the same range '),
      h('button.shift', { type: 'button', dataset: { off: '1d' }, on: { click: () => shift('1d') } }, 'a day earlier'), ' ',
      h('button.shift', { type: 'button', dataset: { off: '7d' }, on: { click: () => shift('7d') } }, 'a week earlier'), ' ',
      this.offNote, byLabel);
  }

  // the label names of the comparison's selector, for "compare by label"
  async loadLabels(s) {
    const r = state.timeRange(s, 'c');
    let names = [];
    try { names = (await api.labelsIn(state.selector(s.type, s.csel), r.start, r.end)).filter((n) => n !== '__name__'); } catch (_) { /* the graphs show it */ }
    const keep = this.labelSel.value;
    clear(this.labelSel).append(h('option', { value: '' }, '(label)'), ...names.map((n) => h('option', { value: n }, n)));
    if (names.includes(keep)) this.labelSel.value = keep;
    await this.loadValues();
  }

  async loadValues() {
    const s = state.get(), name = this.labelSel.value;
    let values = [];
    if (name) {
      const r = state.timeRange(s, 'c');
      const rest = dropLabel(s.csel, name);
      try { values = await api.labelValuesIn(name, state.selector(s.type, rest), r.start, r.end); } catch (_) { /* none */ }
    }
    for (const [el, pick] of [[this.valA, 0], [this.valB, 1]]) {
      clear(el).append(...values.map((v) => h('option', { value: v }, v)));
      if (values.length) el.value = values[Math.min(pick, values.length - 1)];
    }
  }

  byLabel() {
    const s = state.get(), name = this.labelSel.value;
    if (!name || !this.valA.value || !this.valB.value) return;
    const rest = dropLabel(s.csel, name);
    const m = (v) => `${name}=${JSON.stringify(v)}`;
    this.run({ bsel: joinSel(rest, m(this.valA.value)), csel: joinSel(rest, m(this.valB.value)), boff: null,
      brange: s.crange, bfrom: s.cfrom, bto: s.cto }, 'quick');
  }

  // a selector error of either bar, at the column of its text
  explain(e, what) { return this.base.explain(e, what) || this.cmp.explain(e, what); }

  showNorm(fg, s) {
    const used = fg && fg.normalize;
    for (const [m, b] of Object.entries(this.normBtns)) b.setAttribute('aria-checked', String(m === used));
    this.normNote.dataset.used = used || '';
    this.normNote.textContent = !used ? ''
      : used === 'rate' ? `shown: rates, both sides per second of their profiled time (${fg.base_profiled_seconds} s and ${fg.compare_profiled_seconds} s)`
        : fg.aggregation === 'avg' ? 'shown: averages over time (a state at one instant: window lengths do not matter)'
          : s.norm ? 'shown: absolute values' : 'shown: absolute values (the windows have one length)';
  }

  // from: 'b' or 'c' (that bar's Run), 'quick' (the quick bar's patch)
  run(patch, from) {
    // the type picker sits in the baseline bar; both bars run together; the baseline's own range
    // ends a shift (boff), the comparison's keeps it
    const s = state.get();
    const base = this.base.patch();
    if (from === 'c' && s.boff) Object.assign(base, { brange: null, bfrom: null, bto: null });
    const both = {
      ...base, ...this.cmp.patch(), ...(from === 'b' ? { boff: null } : {}), ...patch, zoom: null, bzoom: null, czoom: null,
      bsfrom: null, bsto: null, bssel: null, csfrom: null, csto: null, cssel: null,
    };
    if (!state.set(both)) this.update(state.get(), null, true);
  }

  async update(s, prev, force = false) {
    if (!checkType(s)) return;
    this.base.update(s);
    this.cmp.update({ ...s });
    const info = typeInfo(s.type);
    const gk = ['type', 'bsel', 'brange', 'bfrom', 'bto', 'csel', 'crange', 'cfrom', 'cto', 'boff', 'cpu'];
    const keys = gk.concat(['bsfrom', 'bsto', 'bssel', 'csfrom', 'csto', 'cssel'], FILTERS);
    const dkeys = keys.concat(['norm']);
    const fail = (e) => { if (!this.err.firstChild) this.err.append(this.explain(e, 'compare') || errorBox(e, 'compare')); };
    if (force || state.changed(s, prev, gk) || !this.rb) {
      clear(this.err);
      this.rc = state.timeRange(s, 'c');
      const off = OFFSETS[s.boff];
      this.rb = off ? { start: this.rc.start - off, end: this.rc.end - off, relative: this.rc.relative } : state.timeRange(s, 'b');
      this.offNote.textContent = off ? `baseline: the comparison's range ${s.boff === '1d' ? 'a day' : 'a week'} earlier (${fmtTime(this.rb.start)} – ${fmtTime(this.rb.end)})` : '';
      for (const b of this.quick.querySelectorAll('button.shift')) b.setAttribute('aria-pressed', String(b.dataset.off === s.boff));
      this.loadLabels(s);
      for (const [p, side, r] of [['b', this.bs, this.rb], ['c', this.cs, this.rc]]) {
        side.graph.load(api, { type: s.type, sel: s[p + 'sel'], start: r.start, end: r.end, typeInfo: info, cores: s.cpu === 'cores' })
          .then(() => side.graph.setSelection(this.selOf(state.get(), p))).catch(fail);
      }
    }
    for (const [p, side] of [['b', this.bs], ['c', this.cs]]) {
      side.graph.setSelection(this.selOf(s, p));
      this.showSelection(side.sel, s, p);
    }
    if (force || state.changed(s, prev, dkeys)) {
      const bw = windowOf(s, this.rb, 'b'), cw = windowOf(s, this.rc, 'c');
      const bq = state.selector(s.type, joinSel(s.bsel, s.bssel)), cq = state.selector(s.type, joinSel(s.csel, s.cssel));
      const unit = { sampleUnit: info.sample_unit };
      // the filters of the frame menus (one set, in the URL) apply to both sides and to the diff
      const fp = filterParams(s);
      if (force || state.changed(s, prev, keys)) {
        this.left.load(api, 'query', { query: bq, start: bw.start, end: bw.end, ...fp }, { ...unit, perSecond: coresOf(s, info, bw) }).catch(fail);
        this.right.load(api, 'query', { query: cq, start: cw.start, end: cw.end, ...fp }, { ...unit, perSecond: coresOf(s, info, cw) }).catch(fail);
      }
      const norm = s.norm === 'rate' || s.norm === 'none' ? { normalize: s.norm } : {};
      this.diff.load(api, 'diff', {
        base: bq, base_start: bw.start, base_end: bw.end, compare: cq, compare_start: cw.start, compare_end: cw.end, ...norm, ...fp,
      }, unit).then((fg) => { if (fg) this.showNorm(fg, s); }).catch(fail);
    }
    this.left.apply(s);
    this.right.apply(s);
    this.diff.apply(s);
  }

  selOf(s, p) { return s[p + 'sfrom'] && s[p + 'sto'] ? { sfrom: s[p + 'sfrom'], sto: s[p + 'sto'] } : null; }

  showSelection(el, s, p) {
    clear(el);
    if (!this.selOf(s, p)) { el.append(h('span', 'The whole range; drag over the graph to pick a window.')); return; }
    const a = Number(s[p + 'sfrom']), b = Number(s[p + 'sto']);
    const what = a === b ? `the profile of {${s[p + 'ssel'] || ''}} at ${fmtTime(a)}` : `${fmtTime(a)} – ${fmtTime(b)}`;
    el.append(h('span', 'Window: ', h('strong', what)), ' ', h('button.clear', {
      type: 'button', on: { click: () => state.set({ [p + 'sfrom']: null, [p + 'sto']: null, [p + 'ssel']: null, zoom: null }) },
    }, 'whole range'));
  }

  destroy() { this.bs.graph.destroy(); this.cs.graph.destroy(); }
}

class PageView {
  constructor(root, name) {
    this.root = root;
    this.name = name;
  }

  async update(s, prev) {
    if (prev && prev.view === s.view) return;
    try {
      const mod = await import(`./${this.name}.js`);
      clear(this.root);
      await mod.render(this.root, api);
    } catch (e) {
      clear(this.root).append(errorBox(e, this.name));
    }
  }

  destroy() {}
}

function setNav(view) {
  for (const a of document.querySelectorAll('nav a[data-view]')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// nav links keep the query in step: /graph -> /compare carries type and selector
function navigate(view) {
  const s = state.get();
  if (view === s.view) return;
  const keep = { type: s.type };
  if (view === 'compare') Object.assign(keep, { bsel: s.sel, csel: s.sel, brange: s.range, crange: s.range, bfrom: s.from, bto: s.to, cfrom: s.from, cto: s.to });
  if (view === 'graph' && s.view === 'compare') Object.assign(keep, { sel: s.csel, range: s.crange, from: s.cfrom, to: s.cto });
  state.go(view, keep);
}

async function route(s, prev) {
  const root = document.getElementById('view');
  setNav(s.view);
  document.title = `profstore — ${s.view}`;
  if (!app.view || app.viewName !== s.view) {
    if (app.view) app.view.destroy();
    clear(root);
    app.viewName = s.view;
    prev = null;
    if ((s.view === 'graph' || s.view === 'compare') && !app.types.length) {
      app.view = { update() {}, destroy() {} };
      root.append(emptyState('No profiles stored yet — scrape or push some:'));
      return;
    }
    app.view = s.view === 'graph' ? new GraphView(root)
      : s.view === 'compare' ? new CompareView(root)
        : s.view === 'shared' ? new SharedView(root)
          : s.view === 'upload' ? { update: (st, p) => (p ? null : renderUpload(root)), destroy() {} }
            : new PageView(root, s.view);
  }
  await app.view.update(s, prev);
}

function keyboard(e) {
  const t = e.target;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement;
  if (e.key === '/' && !typing) {
    const sel = document.querySelector('input.selector');
    if (sel) { e.preventDefault(); sel.focus(); }
  }
}

async function start() {
  for (const a of document.querySelectorAll('nav a[data-view]')) {
    a.addEventListener('click', (e) => {
      if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      navigate(a.dataset.view);
    });
  }
  document.addEventListener('keydown', keyboard);
  initSettings(document.querySelector('header.top'));
  const root = document.getElementById('view');
  try {
    app.storedTypes = await api.types();
  } catch (e) {
    app.storedTypes = [];
    root.append(errorBox(e, 'profile types'));
  }
  app.types = groupTypes(app.storedTypes);
  state.setTypeIds((id) => { const t = typeInfo(id); return t ? t.ids : [id || '']; });
  app.state = state;
  state.subscribe((s, prev) => route(s, prev));
  await route(state.get(), null);
  void formatValue;
}

start();
