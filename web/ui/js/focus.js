// focus.js: go tool pprof's filters in the UI, and the line view of a function.
//
// The filters (focus, ignore, hide, show_from: regexps, as pprof's flags) live in the URL under the
// same names and are sent as they are to the profile API, which computes them over the merged
// profile (docs/api.md "Focus, ignore, hide, show_from"): totals, the flame graph, the top table and
// the pprof download agree. They are shown as removable chips. A frame's context menu (right click,
// or Shift+F10 / the context-menu key on a focused frame or table row) adds one for that function
// (its name as an anchored, escaped regexp), opens the sandwich, copies the name, or opens the line
// view: format=list of that function (per-line flat and cum, go tool pprof -list).
//
// Every name, file and regexp is put into the page as text (textContent), never as markup.

import { h, clear, errorBox } from './dom.js';
import { formatValue } from './flame.js';

export const FILTERS = ['focus', 'ignore', 'hide', 'show_from'];
const LABELS = { focus: 'focus', ignore: 'ignore', hide: 'hide', show_from: 'show from' };

// a regexp (Go's syntax) that matches exactly name: its metacharacters escaped, anchored
export function exactRe(name) {
  return '^' + String(name).replace(/[\\.+*?()|[\]{}^$]/g, '\\$&') + '$';
}

// the filters of a state, as API parameters (absent ones left out)
export function filterParams(s) {
  const p = {};
  for (const k of FILTERS) if (s[k]) p[k] = s[k];
  return p;
}

// a filter added to what the state has: regexps of one kind are joined with | (pprof takes one)
export function addFilter(s, kind, re) {
  const cur = s[kind];
  if (!cur) return re;
  if (cur.split('|').includes(re)) return cur;
  return `${cur}|${re}`;
}

// the chips of the filters of s into container: each a button that removes it (onChange(patch))
export function renderChips(container, s, onChange) {
  clear(container);
  const any = FILTERS.some((k) => s[k]);
  container.hidden = !any;
  if (!any) return;
  container.append(h('span.chips-label', 'filters:'));
  for (const k of FILTERS) {
    if (!s[k]) continue;
    container.append(h('span.chip', { dataset: { kind: k } },
      h('span.chip-kind', LABELS[k]), ' ', h('code.chip-re', s[k]), ' ',
      h('button.chip-x', {
        type: 'button', 'aria-label': `remove the ${LABELS[k]} filter ${s[k]}`, title: 'remove this filter',
        on: { click: () => onChange({ [k]: null }) },
      }, '×')));
  }
  if (FILTERS.filter((k) => s[k]).length > 1) {
    container.append(h('button.chips-clear', {
      type: 'button', on: { click: () => onChange(Object.fromEntries(FILTERS.map((k) => [k, null]))) },
    }, 'clear all'));
  }
}

let openMenuEl = null;

export function closeMenu() {
  if (!openMenuEl) return;
  const { el, restore } = openMenuEl;
  openMenuEl = null;
  el.remove();
  document.removeEventListener('mousedown', onOutside, true);
  if (restore && restore.isConnected) restore.focus();
}

function onOutside(ev) {
  if (openMenuEl && !openMenuEl.el.contains(ev.target)) closeMenu();
}

// a context menu of items [{label, action}] for name at (x, y) in the window; keyboard: arrows,
// Home/End, Enter/Space, Escape (focus goes back to where it was)
export function openMenu(name, x, y, items) {
  closeMenu();
  const restore = document.activeElement;
  const buttons = items.map((it) => h('button.ctx-item', {
    type: 'button', role: 'menuitem', tabindex: '-1', dataset: { action: it.id },
    on: { click: () => { closeMenu(); it.action(); } },
  }, it.label));
  const el = h('div.ctx-menu', { role: 'menu', 'aria-label': `actions for ${name}` },
    h('div.ctx-title', name), buttons);
  el.addEventListener('keydown', (ev) => {
    const i = buttons.indexOf(document.activeElement);
    let j = -1;
    switch (ev.key) {
    case 'ArrowDown': j = (i + 1) % buttons.length; break;
    case 'ArrowUp': j = (i - 1 + buttons.length) % buttons.length; break;
    case 'Home': j = 0; break;
    case 'End': j = buttons.length - 1; break;
    case 'Escape': case 'Tab': ev.preventDefault(); closeMenu(); return;
    default: return;
    }
    ev.preventDefault();
    buttons[j].focus();
  });
  document.body.append(el);
  const w = el.offsetWidth || 220, hgt = el.offsetHeight || 200;
  el.style.left = Math.max(0, Math.min(x, window.innerWidth - w - 4)) + 'px';
  el.style.top = Math.max(0, Math.min(y, window.innerHeight - hgt - 4)) + 'px';
  openMenuEl = { el, restore };
  document.addEventListener('mousedown', onOutside, true);
  buttons[0].focus();
  return el;
}

// the menu's items for function name; act: {filter(kind, re), sandwich(name), source(name)}
export function menuItems(name, act) {
  const re = exactRe(name);
  return [
    { id: 'focus', label: 'Focus on this function', action: () => act.filter('focus', re) },
    { id: 'ignore', label: 'Ignore this function', action: () => act.filter('ignore', re) },
    { id: 'hide', label: 'Hide this frame', action: () => act.filter('hide', re) },
    { id: 'show_from', label: 'Show from this function', action: () => act.filter('show_from', re) },
    { id: 'sandwich', label: 'Sandwich (callers and callees)', action: () => act.sandwich(name) },
    { id: 'copy', label: 'Copy name', action: () => copyText(name) },
    { id: 'source', label: 'Line view (source lines)', action: () => act.source(name) },
  ];
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) { // no clipboard permission (an http page): the selection route
    const ta = h('textarea.offscreen', { readonly: true }, text);
    document.body.append(ta);
    ta.select();
    try { document.execCommand('copy'); } catch (_e) { /* nothing more to try */ }
    ta.remove();
  }
  document.body.dataset.copied = text;
}

// whether a key event asks for the context menu: the context-menu key or Shift+F10
export function isMenuKey(ev) {
  return ev.key === 'ContextMenu' || (ev.key === 'F10' && ev.shiftKey);
}

// The line view: per function (and file) a table of its lines with a value, flat and cum.
export class SourceView {
  constructor(container, { onClose } = {}) {
    this.el = h('section.source-view', { 'aria-label': 'line view', hidden: true });
    this.title = h('h3.source-title');
    this.body = h('div.source-body');
    this.closeBtn = h('button.source-close', { type: 'button', on: { click: () => onClose && onClose() } }, 'close line view');
    this.el.append(h('div.source-head', this.title, this.closeBtn), this.body);
    container.append(this.el);
    this.seq = 0;
  }

  hide() { this.el.hidden = true; this.name = null; clear(this.body); }

  // load(call (the panel's API function), params (its query), name, unit)
  async load(call, params, name, unit) {
    const seq = ++this.seq;
    this.name = name;
    this.el.hidden = false;
    this.title.textContent = `Lines of ${name}`;
    clear(this.body);
    this.body.append(h('p.hint', 'loading…'));
    try {
      const ans = await call({ ...params, format: 'list', list: exactRe(name) });
      if (seq !== this.seq) return null;
      clear(this.body);
      this.render(ans, unit);
      return ans;
    } catch (e) {
      if (seq !== this.seq) return null;
      clear(this.body);
      this.body.append(errorBox(e, 'line view'));
      return null;
    }
  }

  render(ans, unit) {
    this.body.dataset.total = String(ans.total);
    if (!ans.functions.length) {
      this.body.append(h('p.hint', 'no samples in this function in this selection'));
      return;
    }
    for (const f of ans.functions) {
      const rows = f.lines.map((l) => h('tr', { dataset: { line: String(l.line), flat: String(l.flat), cum: String(l.cum) } },
        h('td.num.line', String(l.line)),
        h('td.num', l.flat ? formatValue(l.flat, unit) : '.'),
        h('td.num', l.cum ? formatValue(l.cum, unit) : '.'),
        h('td.loc', `${f.file || '?'}:${l.line}`)));
      this.body.append(h('div.source-fn', { dataset: { name: f.name, file: f.file } },
        h('div.source-fn-head', h('code', f.name), ' in ', h('code', f.file || 'no source information'),
          ` — flat ${formatValue(f.flat, unit)}, cum ${formatValue(f.cum, unit)}`),
        h('table.source-lines',
          h('thead', h('tr', h('th', 'line'), h('th', 'flat'), h('th', 'cum'), h('th', 'file:line'))),
          h('tbody', rows))));
    }
  }
}
