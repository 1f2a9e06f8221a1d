// query.js: the query bar. A profile type picker ("name — sample type (unit)", one entry per
// measure, under the profile name: types.js), a label selector input with autocompletion of label
// names and values across every profile type (from /api/v1/labels and /api/v1/label/<name>/values,
// filtered by what is typed and by the matchers already complete), the time bar (time.js: the
// last 5m … 30d, or from/to typed as Grafana takes them, now-30m or 2026-12-01 14:03 in the page's
// zone; zoom out ×2, shift half a range earlier or later; auto-refresh), refresh, and "sum by" labels. A selector error from the server names the
// column of the text typed here (explain), not of the query the UI built around it.

import { h, clear } from './dom.js';
import { RANGES, timeRange, selector, typeIds, set as setState } from './state.js';
import { PRESETS, REFRESH, resolve, zoomOut, shift, inputText, stateValue, fmtTime } from './time.js';
import { selectorOf } from './types.js';

const MATCHER = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*,?/y;
const MAX_SUGGESTIONS = 50;

export function typeLabel(t) {
  return t.label || `${t.name} — ${t.sample_type} (${t.sample_unit})${t.delta ? ' per interval' : ''}`;
}

// the picker's options: one per entry, under its profile name
function typeOptions(types) {
  const names = [...new Set(types.map((t) => t.name))];
  return names.map((n) => h('optgroup', { label: n },
    types.filter((t) => t.name === n).map((t) => h('option', { value: t.id, title: t.title || t.id }, typeLabel(t)))));
}

// a server message with a position in a query: 'invalid parameter "query": 1:59: parse error: …'
const POSITIONED = /^invalid parameter "([^"]+)": (\d+):(\d+): ([\s\S]*)$/;

// context(textBeforeCaret) -> {kind:'name'|'value'|null, prefix, name, op, start, complete}
// `complete` is the matcher text fully typed (used to filter suggestions by the current selector)
export function context(text) {
  let pos = 0;
  const done = [];
  const body = text.replace(/^\s*\{/, (m) => { pos = m.length; return m; });
  MATCHER.lastIndex = pos;
  let m;
  while ((m = MATCHER.exec(body)) !== null) {
    done.push(m[0].replace(/,\s*$/, '').trim());
    pos = MATCHER.lastIndex;
  }
  const rest = body.slice(pos);
  const complete = done.join(', ');
  let r = rest.match(/^\s*([a-zA-Z_][a-zA-Z0-9_]*)?$/);
  if (r) return { kind: 'name', prefix: r[1] || '', start: text.length - (r[1] || '').length, complete };
  r = rest.match(/^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("?)([^"]*)$/);
  if (r) return { kind: 'value', name: r[1], op: r[2], prefix: r[4], start: text.length - r[3].length - r[4].length, complete };
  return { kind: null, complete };
}

function quote(v) { return JSON.stringify(v); }

function unquote(v) {
  if (v[0] === '`') return v.slice(1, -1);
  if (v[0] === "'") v = `"${v.slice(1, -1).replace(/\\'/g, "'").replace(/"/g, '\\"')}"`;
  try { return JSON.parse(v); } catch (_) { return v.slice(1, -1); }
}

// matchersOf(selector text without braces) -> [{name, op, value}] of its complete matchers
export function matchersOf(text) {
  const out = [];
  const body = text.replace(/^\s*\{/, '');
  MATCHER.lastIndex = 0;
  let m;
  while ((m = MATCHER.exec(body)) !== null) out.push({ name: m[1], op: m[2], value: unquote(m[3]) });
  return out;
}

// Autocomplete: a listbox under an input; keyboard: ↓ ↑ Enter/Tab pick, Escape closes
class Autocomplete {
  constructor(input, fetchSuggestions) {
    this.input = input;
    this.fetch = fetchSuggestions;
    this.list = h('ul.suggest', { role: 'listbox', hidden: true });
    this.items = [];
    this.active = -1;
    this.seq = 0;
    input.setAttribute('role', 'combobox');
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('autocomplete', 'off');
    input.addEventListener('input', () => this.refresh());
    input.addEventListener('focus', () => this.refresh());
    input.addEventListener('click', () => this.refresh());
    input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    input.addEventListener('keydown', (e) => this.key(e));
  }

  async refresh() {
    const seq = ++this.seq;
    const caret = this.input.selectionStart ?? this.input.value.length;
    const before = this.input.value.slice(0, caret);
    let res;
    try { res = await this.fetch(before); } catch (_) { res = null; }
    if (seq !== this.seq || document.activeElement !== this.input) return;
    if (!res || !res.items.length) { this.close(); return; }
    this.ctx = res;
    this.items = res.items.slice(0, MAX_SUGGESTIONS);
    this.active = -1;
    clear(this.list);
    this.items.forEach((it, i) => {
      this.list.append(h('li', {
        role: 'option', dataset: { value: it },
        on: { mousedown: (e) => { e.preventDefault(); this.pick(i); } },
      }, it));
    });
    this.list.hidden = false;
  }

  close() { this.list.hidden = true; this.active = -1; }

  move(d) {
    if (this.list.hidden || !this.items.length) return;
    this.active = (this.active + d + this.items.length) % this.items.length;
    [...this.list.children].forEach((li, i) => li.setAttribute('aria-selected', String(i === this.active)));
    this.list.children[this.active].scrollIntoView({ block: 'nearest' });
  }

  key(e) {
    if (this.list.hidden) return;
    if (e.key === 'ArrowDown') { e.preventDefault(); this.move(1); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); this.move(-1); }
    else if (e.key === 'Escape') { e.preventDefault(); this.close(); }
    else if ((e.key === 'Enter' || e.key === 'Tab') && this.active >= 0) {
      e.preventDefault();
      e.stopPropagation();
      this.pick(this.active);
    }
  }

  pick(i) {
    const value = this.items[i];
    const caret = this.input.selectionStart ?? this.input.value.length;
    const text = this.input.value;
    const { kind, start, op } = this.ctx;
    let ins, after = text.slice(caret);
    if (kind === 'name') ins = `${value}=`;
    else {
      ins = quote(value);
      after = after.replace(/^[^,}]*"/, '');
      if (!/^\s*,/.test(after) && after.trim() !== '') ins += ', ';
      void op;
    }
    const before = text.slice(0, start);
    this.input.value = before + ins + after;
    const c = (before + ins).length;
    this.input.setSelectionRange(c, c);
    this.close();
    this.input.dispatchEvent(new Event('input'));
    this.input.focus();
  }
}

// QueryBar(container, {api, types, prefix, title, showType, showBy, refresh, onRun, onTick})
//   onRun(patch): the state keys this bar sets (type, <p>sel, <p>range | <p>from+<p>to, by)
//   refresh: shows the auto-refresh picker (state key refresh); onTick() runs at each of its ticks
export class QueryBar {
  constructor(container, { api, types, prefix = '', title = null, showType = true, showBy = true, refresh = false, onRun, onTick }) {
    this.api = api;
    this.types = types;
    this.prefix = prefix;
    this.onRun = onRun;
    this.onTick = onTick || (() => {});
    this.cache = new Map();
    const p = prefix;
    this.typeSel = h('select.type', { 'aria-label': 'profile type', name: 'type' }, typeOptions(types));
    this.allIds = types.flatMap((t) => t.ids || [t.id]);
    this.selInput = h('input.selector', {
      type: 'text', name: p + 'sel', spellcheck: 'false', placeholder: 'label selector, e.g. job="api"',
      'aria-label': 'label selector',
    });
    this.rangeSel = h('select.range', { 'aria-label': 'time range', name: p + 'range' },
      PRESETS.map((r) => h('option', { value: r }, `last ${r}`)),
      h('option', { value: 'abs' }, 'from – to…'));
    const timeTitle = 'now, now-30m, now-2d, now/d (date math as in Grafana), or 2026-12-01 14:03 in the zone shown at the top right';
    this.fromInput = h('input.from', { type: 'text', name: p + 'from', 'aria-label': 'from', placeholder: 'now-1h', title: timeTitle, spellcheck: 'false', hidden: true });
    this.toInput = h('input.to', { type: 'text', name: p + 'to', 'aria-label': 'to', placeholder: 'now', title: timeTitle, spellcheck: 'false', hidden: true });
    this.timeErr = h('span.timeerr', { role: 'alert' });
    const step = (cls, label, text, fn) => h('button.' + cls, { type: 'button', title: label, 'aria-label': label, on: { click: fn } }, text);
    this.zoomBtn = step('zoomout', 'zoom out: twice the range', '⊖ ×2', () => this.move(zoomOut(this.range(), this.prefix)));
    this.leftBtn = step('earlier', 'earlier: half the range back', '◀', () => this.move(shift(this.range(), -1, this.prefix)));
    this.rightBtn = step('later', 'later: half the range on', '▶', () => this.move(shift(this.range(), 1, this.prefix)));
    this.refreshSel = refresh ? h('select.autorefresh', {
      'aria-label': 'auto-refresh', name: 'refresh', title: 'refresh the graph and profile every …',
      on: { change: () => setState({ refresh: this.refreshSel.value || null }) },
    }, h('option', { value: '' }, 'auto-refresh off'), Object.keys(REFRESH).map((r) => h('option', { value: r }, `every ${r}`))) : null;
    this.timer = null;
    this.every = 0;
    this.runBtn = h('button.run', { type: 'submit', title: 'run the query (Enter)' }, 'Refresh');
    this.byBox = h('details.sumby', h('summary', 'sum by'), h('div.sumby-list'));
    this.ac = new Autocomplete(this.selInput, (before) => this.suggest(before));
    this.rangeSel.addEventListener('change', () => this.rangeChanged());
    this.typeSel.addEventListener('change', () => this.run());
    const form = h('form.querybar', { on: { submit: (e) => { e.preventDefault(); this.run(); } } },
      title ? h('span.qtitle', title) : null,
      showType ? this.typeSel : h('span.type.type-note', 'the same profile type'),
      h('div.selwrap', h('span.brace', '{'), this.selInput, h('span.brace', '}'), this.ac.list),
      h('span.timebar', this.rangeSel, this.fromInput, this.toInput, this.leftBtn, this.zoomBtn, this.rightBtn, this.timeErr),
      showBy ? this.byBox : null,
      this.runBtn, this.refreshSel);
    this.showType = showType;
    this.el = form;
    container.append(form);
  }

  type() { return this.typeSel.value; }

  // the matchers typed so far over every profile type (suggestions come from all of them)
  match(extra) {
    return selectorOf(this.allIds.length ? this.allIds : [this.type()], extra || '').text;
  }

  async cached(key, fn) {
    if (!this.cache.has(key)) this.cache.set(key, fn().catch((e) => { this.cache.delete(key); throw e; }));
    return this.cache.get(key);
  }

  async suggest(before) {
    const ctx = context(before);
    if (!ctx.kind) return null;
    const match = this.match(ctx.complete);
    let all;
    if (ctx.kind === 'name') {
      all = await this.cached(`n|${match}`, () => this.api.labels(match));
      const used = new Set(ctx.complete.split(',').map((m) => m.trim().split(/[=!~]/)[0]));
      all = all.filter((n) => n !== '__name__' && !used.has(n));
    } else {
      all = await this.cached(`v|${ctx.name}|${match}`, () => this.api.labelValues(ctx.name, match));
    }
    const pre = ctx.prefix.toLowerCase();
    const items = all.filter((x) => x.toLowerCase().startsWith(pre) && x !== ctx.prefix)
      .concat(all.filter((x) => !x.toLowerCase().startsWith(pre) && x.toLowerCase().includes(pre)));
    return { ...ctx, items };
  }

  rangeChanged() {
    const abs = this.rangeSel.value === 'abs';
    this.fromInput.hidden = this.toInput.hidden = !abs;
    if (abs && !this.fromInput.value) {
      // the preset as the relative range it is: edit it into any other
      this.fromInput.value = `now-${this.lastRange || '1h'}`;
      this.toInput.value = 'now';
    }
    if (abs) this.fromInput.focus();
    else this.run();
  }

  // the range the URL holds for this bar now
  range() { return timeRange(this.state || {}, this.prefix); }

  // a zoom or shift: the new range runs
  move(patch) {
    this.rangeSel.value = patch[this.prefix + 'range'] || 'abs';
    this.fromInput.value = inputText(patch[this.prefix + 'from']);
    this.toInput.value = inputText(patch[this.prefix + 'to']);
    this.ac.close();
    this.onRun({ ...this.patch(), ...patch });
  }

  // auto-refresh: every `refresh` of the state, onTick() while this bar is on the page
  arm(every) {
    if (every === this.every) return;
    clearInterval(this.timer);
    this.every = every;
    this.timer = every ? setInterval(() => {
      if (!this.el.isConnected) { clearInterval(this.timer); this.every = 0; return; }
      if (!document.hidden) this.onTick();
    }, every * 1000) : null;
  }

  async loadByLabels(state) {
    const list = this.byBox.querySelector('.sumby-list');
    const chosen = new Set((state.by || '').split(',').filter(Boolean));
    let names = [];
    const all = selector(this.type(), '');
    try { names = await this.cached(`n|${all}`, () => this.api.labels(all)); } catch (_) { /* shown by the graph */ }
    clear(list);
    for (const n of names.filter((x) => x !== '__name__')) {
      const cb = h('input', { type: 'checkbox', value: n, checked: chosen.has(n), on: { change: () => this.run() } });
      list.append(h('label', cb, ' ', n));
    }
    this.byBox.querySelector('summary').textContent = chosen.size ? `sum by (${[...chosen].join(', ')})` : 'sum by';
  }

  // update(state): show the state's values
  update(state) {
    const p = this.prefix;
    if (state.type && [...this.typeSel.options].some((o) => o.value === state.type)) this.typeSel.value = state.type;
    if (document.activeElement !== this.selInput) this.selInput.value = state[p + 'sel'] || '';
    this.state = state;
    if (state[p + 'from'] && state[p + 'to']) {
      this.rangeSel.value = 'abs';
      for (const [input, k] of [[this.fromInput, 'from'], [this.toInput, 'to']]) {
        if (document.activeElement !== input) input.value = inputText(state[p + k]);
      }
      const r = resolve(state, p);
      this.timeErr.textContent = r ? '' : 'from and to are not a range: the last hour is shown';
      this.timeErr.title = r ? `${fmtTime(r.start)} – ${fmtTime(r.end)}` : '';
    } else {
      this.rangeSel.value = RANGES[state[p + 'range']] ? state[p + 'range'] : '1h';
      this.lastRange = this.rangeSel.value;
      this.fromInput.value = this.toInput.value = '';
      this.timeErr.textContent = '';
    }
    this.fromInput.hidden = this.toInput.hidden = this.rangeSel.value !== 'abs';
    for (const i of [this.fromInput, this.toInput]) i.removeAttribute('aria-invalid');
    if (this.refreshSel) {
      this.refreshSel.value = REFRESH[state.refresh] ? state.refresh : '';
      this.arm(REFRESH[state.refresh] || 0);
    }
    if (this.byBox.isConnected) this.loadByLabels(state);
  }

  // the state patch this bar stands for
  patch() {
    const p = this.prefix;
    const out = { [p + 'sel']: this.selInput.value.trim().replace(/^\{|\}$/g, '').trim() };
    if (this.showType) out.type = this.type();
    if (this.rangeSel.value === 'abs') {
      const f = stateValue(this.fromInput.value), t = stateValue(this.toInput.value, { roundUp: true });
      this.badTime = f === null ? this.fromInput : t === null ? this.toInput : null;
      if (!this.badTime && !resolve({ from: f, to: t })) this.badTime = this.toInput;
      if (!this.badTime) {
        out[p + 'range'] = null;
        out[p + 'from'] = f;
        out[p + 'to'] = t;
      }
    } else {
      this.badTime = null;
      out[p + 'range'] = this.rangeSel.value;
      out[p + 'from'] = out[p + 'to'] = null;
    }
    if (this.byBox.isConnected) {
      out.by = [...this.byBox.querySelectorAll('input:checked')].map((c) => c.value).join(',');
    }
    return out;
  }

  run() {
    this.ac.close();
    this.selInput.removeAttribute('aria-invalid');
    const patch = this.patch();
    for (const i of [this.fromInput, this.toInput]) i.removeAttribute('aria-invalid');
    if (this.badTime) {
      // not a time, or to not after from: said next to the inputs, nothing runs
      this.badTime.setAttribute('aria-invalid', 'true');
      this.timeErr.textContent = this.badTime === this.fromInput || stateValue(this.toInput.value, { roundUp: true }) === null
        ? `"${this.badTime.value}" is not a time: now-30m, now, 2026-12-01 14:03`
        : 'to must be after from';
      this.badTime.focus();
      return;
    }
    this.timeErr.textContent = '';
    this.onRun(patch);
  }

  // explain(err, what): the error as an inline box; a parse error inside what was typed here says
  // the column in the typed text (with a caret under it) and marks the input; null when err is
  // not about this bar's selector
  explain(err, what) {
    const m = POSITIONED.exec((err && err.message) || '');
    const sel = this.patch()[this.prefix + 'sel'] || '';
    if (!m || !err.params) return null;
    const asked = [].concat(err.params[m[1]] ?? []);
    const mine = selectorOf(typeIds(this.type()), sel);
    const col = Number(m[3]) - 1; // 0-based in the query sent
    for (const q of asked) {
      const at = String(q).indexOf(mine.text);
      if (at < 0 || Number(m[2]) !== 1) continue;
      const c = col - at - mine.at; // 0-based in sel
      if (c < 0 || c > sel.length) return null; // outside what was typed (the type)
      const raw = this.selInput.value.includes(sel) ? this.selInput.value : sel;
      const k = raw.indexOf(sel) + c; // 0-based in the text as typed
      this.selInput.setAttribute('aria-invalid', 'true');
      this.selInput.setSelectionRange(k, k);
      return h('div.error.selerror', { role: 'alert' }, h('strong', `${what}: `),
        `selector, column ${k + 1}: ${m[4]}`,
        h('pre.caret', `{${raw}}\n${' '.repeat(k + 1)}^`));
    }
    return null;
  }
}
