// table.js - the top table: the rows of format=top ({total, rows: [{function, file, line, flat, flat%,
// cum, cum%}]}) as a sortable, filterable table (the last column the function's file:line, where it
// starts); a click (or Enter) on a row selects its function.
//
// Sorting is by the column's value (numbers numerically; a diff sorts by absolute value so the
// largest drops rank with the largest rises, as the server orders them), ties by function name.
// The filter is a case-insensitive substring of the function or the file. At most MAX_ROWS rows are
// put into the DOM (a line says how many more there are); the counts in the caption are exact.

import { formatValue, formatPercent } from './flame.js';

const MAX_ROWS = 2000;

const COLUMNS = [
    { key: 'function', label: 'function', num: false },
    { key: 'flat', label: 'flat', num: true },
    { key: 'flat%', label: 'flat%', num: true },
    { key: 'cum', label: 'cum', num: true },
    { key: 'cum%', label: 'cum%', num: true },
];

export class TopTable {
    /** opts: onSelect(name) when a row is chosen; filter (default true): show a filter box; onMenu(name,
     *  x, y) a row's context menu (right click, Shift+F10, the context-menu key). */
    constructor(container, opts = {}) {
        this.container = container;
        this.opts = opts;
        this.rows = [];
        this.view = [];
        this.unit = '';
        this.diff = false;
        this.sortKey = 'flat';
        this.desc = true;
        this.text = '';
        this.selected = null;
        container.classList.add('toptable');
        this.bar = document.createElement('div');
        this.bar.className = 'toptable-bar';
        if (opts.filter !== false) {
            this.input = document.createElement('input');
            this.input.type = 'search';
            this.input.className = 'toptable-filter';
            this.input.placeholder = 'filter functions';
            this.input.setAttribute('aria-label', 'filter functions');
            this.input.addEventListener('input', () => this.filter(this.input.value));
            this.bar.append(this.input);
        }
        this.caption = document.createElement('span');
        this.caption.className = 'toptable-count';
        this.bar.append(this.caption);
        this.table = document.createElement('table');
        this.thead = document.createElement('thead');
        this.tbody = document.createElement('tbody');
        this.table.append(this.thead, this.tbody);
        this.more = document.createElement('div');
        this.more.className = 'toptable-more';
        const scroll = document.createElement('div');
        scroll.className = 'toptable-scroll';
        scroll.append(this.table, this.more);
        container.append(this.bar, scroll);
        this._head();
        this.tbody.addEventListener('click', (ev) => {
            const tr = ev.target.closest('tr');
            if (tr && tr.dataset.i !== undefined) this._choose(+tr.dataset.i);
        });
        // opts.onMenu(name, x, y): right click, or Shift+F10 / the context-menu key on a row
        this.tbody.addEventListener('contextmenu', (ev) => {
            const tr = ev.target.closest('tr');
            if (!tr || tr.dataset.name === undefined || !this.opts.onMenu) return;
            ev.preventDefault();
            this.opts.onMenu(tr.dataset.name, ev.clientX, ev.clientY);
        });
        this.tbody.addEventListener('keydown', (ev) => {
            const tr = ev.target.closest('tr');
            if (!tr) return;
            if ((ev.key === 'ContextMenu' || (ev.key === 'F10' && ev.shiftKey)) && this.opts.onMenu && tr.dataset.name !== undefined) {
                ev.preventDefault();
                const r = tr.getBoundingClientRect();
                this.opts.onMenu(tr.dataset.name, r.left + 16, r.bottom);
                return;
            }
            if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); this._choose(+tr.dataset.i); }
            if (ev.key === 'ArrowDown' && tr.nextElementSibling) { ev.preventDefault(); tr.nextElementSibling.focus(); }
            if (ev.key === 'ArrowUp' && tr.previousElementSibling) { ev.preventDefault(); tr.previousElementSibling.focus(); }
        });
    }

    _head() {
        const tr = document.createElement('tr');
        for (const c of COLUMNS) {
            const th = document.createElement('th');
            th.dataset.key = c.key;
            th.className = c.num ? 'num' : '';
            th.setAttribute('aria-sort', c.key === this.sortKey ? (this.desc ? 'descending' : 'ascending') : 'none');
            const b = document.createElement('button');
            b.type = 'button';
            b.textContent = c.label + (c.key === this.sortKey ? (this.desc ? ' ▼' : ' ▲') : '');
            b.addEventListener('click', () => this.sort(c.key, c.key === this.sortKey ? !this.desc : c.num));
            th.append(b);
            tr.append(th);
        }
        const loc = document.createElement('th');
        loc.className = 'loc';
        loc.textContent = 'file:line';
        tr.append(loc);
        this.thead.textContent = '';
        this.thead.append(tr);
    }

    /** top: the JSON of format=top; unit: the sample unit; diff: signed values (compare - base). */
    setData(top, { unit = '', diff = false } = {}) {
        if (!top || !Array.isArray(top.rows)) throw new Error('top table: expected {total, rows}');
        this.top = top;
        this.rows = top.rows;
        this.unit = unit;
        this.diff = diff;
        this.container.classList.toggle('toptable-diff', diff);
        this._render();
    }

    /** Sorts by column ('function', 'flat', 'flat%', 'cum', 'cum%'); desc: largest first. */
    sort(column, desc = true) {
        if (!COLUMNS.some((c) => c.key === column)) throw new Error('top table: no column ' + column);
        this.sortKey = column;
        this.desc = !!desc;
        this._head();
        this._render();
    }

    /** Shows only the rows whose function or file contains text (case-insensitive); '' = all. */
    filter(text) {
        this.text = text || '';
        if (this.input && this.input.value !== this.text) this.input.value = this.text;
        this._render();
    }

    /** Marks the row of a function (no callback); null clears. */
    select(name) {
        this.selected = name || null;
        for (const tr of this.tbody.children)
            tr.classList.toggle('selected', tr.dataset.name === this.selected);
    }

    /** The functions in display order (after filter and sort). */
    get names() { return this.view.map((r) => r.function); }

    _choose(i) {
        const r = this.view[i];
        if (!r) return;
        this.select(r.function);
        if (this.opts.onSelect) this.opts.onSelect(r.function);
    }

    _render() {
        const key = this.sortKey, dir = this.desc ? -1 : 1;
        const q = this.text.toLowerCase();
        let rows = q ? this.rows.filter((r) => r.function.toLowerCase().includes(q) ||
            (r.file || '').toLowerCase().includes(q)) : this.rows.slice();
        const num = key !== 'function';
        const val = (r) => (this.diff ? Math.abs(r[key]) : r[key]);
        rows.sort((a, b) => {
            let c = 0;
            if (num) c = val(a) - val(b);
            else c = a.function < b.function ? -1 : a.function > b.function ? 1 : 0;
            if (c !== 0) return c * dir;
            return a.function < b.function ? -1 : a.function > b.function ? 1 : 0;
        });
        this.view = rows;
        const frag = document.createDocumentFragment();
        const u = this.unit;
        const n = Math.min(rows.length, MAX_ROWS);
        for (let i = 0; i < n; i++) {
            const r = rows[i];
            const tr = document.createElement('tr');
            tr.tabIndex = 0;
            tr.dataset.i = String(i);
            tr.dataset.name = r.function;
            if (r.function === this.selected) tr.className = 'selected';
            const fn = document.createElement('td');
            fn.className = 'fn';
            fn.textContent = r.function;
            if (r.file) fn.title = r.file;
            tr.append(fn);
            const where = r.file ? (r.line ? `${r.file}:${r.line}` : r.file) : '';
            if (where) fn.title = where;
            for (const [k, fmt] of [['flat', 'v'], ['flat%', 'p'], ['cum', 'v'], ['cum%', 'p']]) {
                const td = document.createElement('td');
                const v = r[k];
                td.className = 'num' + (this.diff && v > 0 ? ' grew' : this.diff && v < 0 ? ' shrank' : '');
                td.dataset.value = String(v);
                const sign = this.diff && v > 0 ? '+' : '';
                td.textContent = sign + (fmt === 'v' ? formatValue(v, u) : formatPercent(v / 100));
                tr.append(td);
            }
            const loc = document.createElement('td');
            loc.className = 'loc';
            loc.textContent = where;
            tr.append(loc);
            frag.append(tr);
        }
        this.tbody.textContent = '';
        this.tbody.append(frag);
        this.caption.textContent = q ? `${rows.length} of ${this.rows.length} functions` : `${this.rows.length} functions`;
        this.more.textContent = rows.length > n ? `${rows.length - n} more rows: filter to see them` : '';
        this.more.hidden = rows.length <= n;
        if (!this.rows.length) this.more.textContent = 'no functions in this selection';
        this.more.hidden = this.more.textContent === '';
    }
}
