// panel.js: the profile panel under the graph and in compare: a toolbar (view mode, root at
// bottom, search with its share, function filter, downloads, total) over uiflame's FlameGraph,
// TopTable and Sandwich. Its state (zoom, q, mode, inv, fn) lives in the URL: the panel reports
// changes through onState(patch, push) and shows whatever apply(state) gives it.

import { TopTable } from './table.js';
import { Sandwich } from './sandwich.js';
import { FlameGraph, formatValue, displayUnit } from './flame.js';
import { h, clear, errorBox, emptyState, pct } from './dom.js';
import { FILTERS, addFilter, renderChips, openMenu, menuItems, SourceView } from './focus.js';

export const MODES = { both: 'Flame + table', flame: 'Flame graph', table: 'Top table', sandwich: 'Sandwich' };
const MAX_NODES = 8192;
const TOP_ROWS = 500;

function download(name, blob) {
  const a = h('a', { href: URL.createObjectURL(blob), download: name, hidden: true });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

const AVG_TITLE = 'time-average: per series the mean of its profiles over the window, node by node, the series summed '
  + '(the type is a state at one instant: memory in use, goroutines); aggregation=sum in the API adds them up instead';

// The total above a flame graph, in the measure its values are: a merge's total, "avg" when the type
// averages over time; a diff's base → compare and change, as rates per second of profiled time when
// the answer is normalised (normalize=rate: both sides are the compare side's profiled time of their
// rate, so a value / compare_profiled_seconds is per second), else absolute.
export function headline(fg, diff, unit) {
  if (!diff) {
    const avg = fg.aggregation === 'avg';
    return { text: `${avg ? 'avg' : 'total'} ${formatValue(fg.total, unit)}`, title: avg ? AVG_TITLE : 'every profile summed' };
  }
  const l = fg.left_ticks || 0, r = fg.right_ticks || 0;
  const rate = fg.normalize === 'rate' && fg.compare_profiled_seconds > 0;
  const per = rate ? fg.compare_profiled_seconds : 1;
  const fmt = (v) => `${formatValue(v / per, unit)}${rate ? '/s' : ''}`;
  const d = r - l;
  const pctText = l ? ` ${d >= 0 ? '+' : ''}${(100 * d / l).toFixed(1)}%` : '';
  const change = d === 0 ? 'no change' : `${d > 0 ? '+' : '−'}${fmt(Math.abs(d))}${pctText}`;
  const what = rate ? 'rate' : fg.aggregation === 'avg' ? 'avg' : 'absolute';
  const title = rate
    ? `rates: value per second of profiled time (base ${fg.base_profiled_seconds} s, comparison ${fg.compare_profiled_seconds} s of profiles); colours, table and this line use them`
    : fg.aggregation === 'avg' ? `${AVG_TITLE}; colours, table and this line use these values`
      : 'absolute values of each window; colours, table and this line use them';
  return { text: `${what}: base ${fmt(l)} → ${fmt(r)} (${change})`, title };
}

export class ProfilePanel {
  // opts: {onState(patch, push), diff, modes (false = flame only), title, empty() (the message
  // of an empty answer), explain(err) (an error's box, or null for the plain one)}
  // filters: pprof's filters from a frame's context menu, shown as chips, and the line view (URL keys
  // focus, ignore, hide, show_from, src; the caller sends the filters with its queries); 'menu': the
  // context menu's filters only (Compare's sides: the diff panel beside them shows the chips and the
  // line view)
  constructor(container, { onState, diff = false, modes = true, title = null, keys = {}, empty = null, explain = null, filters = false } = {}) {
    this.empty = empty || (() => emptyState('No profiles in this range — scrape or push some:'));
    this.explain = explain || (() => null);
    this.onState = onState || (() => {});
    this.diff = diff;
    this.k = { zoom: 'zoom', q: 'q', mode: 'mode', inv: 'inv', fn: 'fn', ...keys };
    this.modeBtns = {};
    const modeBar = h('div.modes', { role: 'radiogroup', 'aria-label': 'view mode' },
      Object.entries(MODES).map(([m, label]) => {
        const b = h('button.mode', { type: 'button', role: 'radio', dataset: { mode: m }, on: { click: () => this.onState({ [this.k.mode]: m }, true) } }, label);
        this.modeBtns[m] = b;
        return b;
      }));
    this.invBox = h('input', { type: 'checkbox', on: { change: () => this.onState({ [this.k.inv]: this.invBox.checked ? '1' : null }, true) } });
    this.searchInput = h('input.search', {
      type: 'search', placeholder: 'search frames (regex)', 'aria-label': 'search frames', spellcheck: 'false',
      on: { input: () => { clearTimeout(this.st); this.st = setTimeout(() => this.onState({ [this.k.q]: this.searchInput.value }, false), 200); } },
    });
    this.shareEl = h('span.share', { 'aria-live': 'polite' });
    this.pprofLink = h('a.dl.pprof', { href: '#', download: diff ? 'diff.pb.gz' : 'profile.pb.gz', title: 'gzipped pprof for go tool pprof' }, 'pprof');
    this.totalEl = h('span.total');
    const svgBtn = h('button.dl.svg', { type: 'button', on: { click: () => this.flame && download('flamegraph.svg', new Blob([this.flame.toSVG()], { type: 'image/svg+xml' })) } }, 'SVG');
    const pngBtn = h('button.dl.png', { type: 'button', on: { click: async () => { if (this.flame) download('flamegraph.png', await this.flame.toPNG()); } } }, 'PNG');
    this.toolbar = h('div.toolbar',
      title ? h('h3.ptitle', title) : null,
      modes ? modeBar : null,
      h('label.inv', this.invBox, ' root at bottom'),
      this.searchInput, this.shareEl,
      h('span.downloads', 'download: ', this.pprofLink, ' ', svgBtn, ' ', pngBtn),
      this.totalEl);
    this.chipsEl = h('div.chips', { hidden: true, 'aria-label': 'filters' });
    this.msg = h('div.panel-msg');
    this.flameEl = h('div.pflame');
    this.tableEl = h('div.ptable');
    this.sandEl = h('div.psandwich');
    this.body = h('div.panel-body', this.flameEl, this.tableEl, this.sandEl);
    this.el = h('section.panel', this.toolbar, this.chipsEl, this.msg, this.body);
    container.append(this.el);
    this.filters = filters === true;
    const onMenu = filters ? (name, x, y) => openMenu(name, x, y, menuItems(name, {
      filter: (k, re) => this.onState({ [k]: addFilter(this.last || {}, k, re), [this.k.zoom]: null }, true),
      sandwich: (n) => this.onState({ [this.k.mode]: 'sandwich', [this.k.fn]: n }, true),
      source: (n) => this.onState({ src: n }, true),
    }).filter((it) => (it.id !== 'sandwich' || modes) && (it.id !== 'source' || this.filters))) : null;
    if (this.filters) this.source = new SourceView(this.el, { onClose: () => this.onState({ src: null }, true) });
    this.modes = modes;
    // a click zooms (one history entry) and selects its function (in the same entry)
    this.flame = new FlameGraph(this.flameEl, {
      controls: false,
      onZoom: (path) => this.onState({ [this.k.zoom]: path && path.length ? JSON.stringify(path) : null }, true),
      onSelect: (name) => this.onState({ [this.k.fn]: name }, false),
      onHover: () => {},
      onMenu,
    });
    if (modes) {
      this.table = new TopTable(this.tableEl, { onSelect: (name) => this.onState({ [this.k.fn]: name }, true), onMenu });
      this.sandwich = new Sandwich(this.sandEl, { onSelect: (name) => this.onState({ [this.k.fn]: name }, true) });
    }
    this.fg = null;
  }

  // load(api, kind ('query'|'diff'|'id': one profile by its id, params {id}), params, {sampleUnit,
  // perSecond (> 0, a time type: values as cores, per second of these seconds: the range's)})
  // -> the flame graph JSON
  async load(api, kind, params, { sampleUnit, perSecond = 0 }) {
    const seq = this.seq = (this.seq || 0) + 1;
    clear(this.msg);
    this.el.classList.add('busy');
    this.el.classList.remove('failed');
    const call = kind === 'diff' ? api.diff : kind === 'id' ? api.profileById : api.profile;
    this.query = { call, params };
    this.pprofLink.href = api.url(kind === 'id' ? '/api/v1/profile' : `/api/v1/profiles/${kind}`, params);
    try {
      // one merge for both: a selection's flame graph answer carries its top table (top=); a diff's
      // top table is of the difference, a request of its own
      let fg, top = null;
      if (!this.modes) fg = await call({ ...params, format: 'flamegraph', max_nodes: MAX_NODES });
      else if (kind !== 'diff') ({ top, ...fg } = await call({ ...params, format: 'flamegraph', max_nodes: MAX_NODES, top: TOP_ROWS }));
      else {
        [fg, top] = await Promise.all([call({ ...params, format: 'flamegraph', max_nodes: MAX_NODES }),
          call({ ...params, format: 'top', limit: TOP_ROWS })]);
      }
      if (seq !== this.seq) return null;
      this.fg = fg;
      this.sampleUnit = displayUnit(sampleUnit, perSecond);
      const empty = this.diff ? !fg.left_ticks && !fg.right_ticks : !fg.total;
      this.el.classList.toggle('empty', empty);
      if (empty) this.msg.append(this.empty());
      this.totalEl.dataset.total = String(fg.total);
      this.totalEl.dataset.left = String(fg.left_ticks ?? '');
      this.totalEl.dataset.right = String(fg.right_ticks ?? '');
      this.totalEl.dataset.aggregation = fg.aggregation || '';
      this.totalEl.dataset.normalize = fg.normalize || '';
      const head = headline(fg, this.diff, this.sampleUnit);
      this.totalEl.textContent = head.text;
      this.totalEl.title = head.title;
      // the tooltip's file:line (the function's start line when the profile has it)
      const files = top ? new Map(top.rows.map((r) => [r.function, r.file && r.line ? `${r.file}:${r.line}` : r.file])) : null;
      this.files = files;
      this.flame.setData(fg, { unit: this.sampleUnit, diff: this.diff, inverted: this.inverted, files });
      if (this.table) this.table.setData(top, { unit: this.sampleUnit, diff: this.diff });
      this.top = top;
      this.applied = null;
      if (this.last) this.apply(this.last);
      if (this.source && this.last && this.last.src) this.source.load(call, params, this.last.src, this.sampleUnit);
      return fg;
    } catch (e) {
      if (seq !== this.seq) return null;
      this.fg = null;
      this.el.classList.add('failed');
      this.msg.append(this.explain(e) || errorBox(e, 'profile'));
      throw e;
    } finally {
      if (seq === this.seq) this.el.classList.remove('busy');
    }
  }

  // apply(state): zoom, search, mode, inverted, selected function
  apply(s) {
    this.last = s;
    const k = this.k;
    const mode = this.modes ? (MODES[s[k.mode]] ? s[k.mode] : 'both') : 'flame';
    this.el.dataset.mode = mode;
    for (const [m, b] of Object.entries(this.modeBtns)) b.setAttribute('aria-checked', String(m === mode));
    this.inverted = s[k.inv] === '1';
    this.invBox.checked = this.inverted;
    if (document.activeElement !== this.searchInput) this.searchInput.value = s[k.q] || '';
    if (this.filters) renderChips(this.chipsEl, s, (patch) => this.onState(patch, true));
    if (!this.fg) return;
    const prev = this.applied || {};
    if (this.source && prev.src !== s.src) {
      if (s.src && this.query) this.source.load(this.query.call, this.query.params, s.src, this.sampleUnit);
      else if (!s.src) this.source.hide();
    }
    if (prev.inv !== this.inverted) this.flame.setInverted(this.inverted);
    let zoom = [];
    try { zoom = s[k.zoom] ? JSON.parse(s[k.zoom]) : []; } catch (_) { zoom = []; }
    if (prev.zoom !== s[k.zoom]) this.flame.zoom(Array.isArray(zoom) ? zoom : []);
    if (prev.q !== s[k.q]) this.showSearch(s[k.q] || '');
    const fn = s[k.fn] || null;
    if (prev.fn !== fn) {
      this.flame.highlight(fn);
      if (this.table && fn !== this.table.selected) this.table.select(fn);
      if (this.sandwich) this.sandwich.setData(this.fg, fn, { unit: this.sampleUnit, diff: this.diff, files: this.files });
    }
    this.applied = { inv: this.inverted, zoom: s[k.zoom], q: s[k.q], fn, src: s.src };
    this.flameEl.dataset.fn = fn || '';
  }

  showSearch(q) {
    this.shareEl.textContent = '';
    this.searchInput.classList.remove('bad');
    if (!q) { this.flame.search(''); return; }
    try { new RegExp(q); } catch (e) {
      this.searchInput.classList.add('bad');
      this.shareEl.textContent = `bad regex: ${e.message}`;
      return;
    }
    const r = this.flame.search(q);
    if (r) {
      this.shareEl.dataset.total = String(r.total);
      this.shareEl.textContent = `${r.matches} frames match: ${formatValue(r.total, this.sampleUnit)} (${pct(r.total, this.fg.total)})`;
    }
  }

  destroy() { this.flame.destroy(); this.el.remove(); }
}
