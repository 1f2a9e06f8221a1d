// flame.js - the flame graph of the UI: decodes the JSON of format=flamegraph (Pyroscope's compact
// FlameGraph shape, docs/api.md "Formats"; diffs with 7 values per node) and draws it on a canvas.
//
// The model. fg.levels[L] is a flat list of [x_offset, total, self, name] (diff: [l_offset, l_total,
// l_self, r_offset, r_total, r_self, name]); an offset is relative to the end of the previous node
// of the same level. decode() turns that into flat typed arrays over all nodes in level order (x,
// width, self, name, parent, first/last child), with x and width in value units. A diff node is drawn
// with width l_total + r_total at x = l_x + r_x (both sides nest, so their sums nest too), as Pyroscope
// draws it, and coloured by the relative change of its value: (r - l) / l, in the measure the diff
// answer holds (absolute values, or both sides scaled to one profiled time with normalize=rate),
// the same measure as the panel's headline and the table of changes; red grew, green shrank, full
// colour at +-100% (new frames are full red, gone ones full green), grey when unchanged.
//
// The view. A zoom is a node index: the x range [x, x + width) of that node fills the canvas and every
// node overlapping it is drawn (clipped): the zoomed node's ancestors span the width (dimmed), its
// descendants are the only nodes below it. Nodes narrower than half a pixel are not drawn. Row y is
// the level (icicle, root on top) or nlevels - 1 - level (inverted). Hover does not redraw the main
// canvas: a second canvas on top only strokes the hovered box, so hovering stays cheap at any size.
// Colours: a hue per package (FNV-1a of the package part of the function name: Go's
// "path/to/pkg.Func" -> "path/to/pkg", C++ "ns::f" -> "ns", "mod:func" -> "mod"); saturation and
// lightness, text, dim and match colours come from CSS variables (css/flame.css), so dark and light
// follow prefers-color-scheme; the graph redraws when the scheme changes.
//
// Keyboard: the canvas is focusable; arrows move a focus box (up/down = parent/first child in the
// drawing direction, left/right = neighbours on the row), Enter zooms into it, Escape zooms out one
// level. Click zooms (and reports the function through onSelect), the breadcrumb zooms out.

const ROW = 18;          // px per level
const MIN_PX = 0.5;      // narrower nodes are not drawn
const FONT_PX = 12;

// ---- values ------------------------------------------------------------------------------------

const TIME_NS = { nanoseconds: 1, microseconds: 1e3, milliseconds: 1e6, seconds: 1e9 };

/** A value in the profile's unit as people read it: ns -> s/ms/µs, bytes -> KiB/MiB/GiB, counts.
 *  unit {sample (a time unit), perSecond (seconds)}: CPU time as cores, the value per second of
 *  perSecond, written as the graph's cores (dom.js). */
export function formatValue(v, unit) {
    if (v === undefined || v === null || Number.isNaN(v)) return '';
    if (unit && typeof unit === 'object') return formatCores(v, unit);
    const a = Math.abs(v);
    const sign = v < 0 ? '-' : '';
    const fix = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
    if (unit in TIME_NS) {
        const ns = a * TIME_NS[unit];
        if (ns >= 3600e9) return sign + fix(ns / 3600e9) + ' h';
        if (ns >= 60e9) return sign + fix(ns / 60e9) + ' min';
        if (ns >= 1e9) return sign + fix(ns / 1e9) + ' s';
        if (ns >= 1e6) return sign + fix(ns / 1e6) + ' ms';
        if (ns >= 1e3) return sign + fix(ns / 1e3) + ' µs';
        return sign + ns.toFixed(0) + ' ns';
    }
    if (unit === 'bytes') {
        if (a >= 2 ** 40) return sign + fix(a / 2 ** 40) + ' TiB';
        if (a >= 2 ** 30) return sign + fix(a / 2 ** 30) + ' GiB';
        if (a >= 2 ** 20) return sign + fix(a / 2 ** 20) + ' MiB';
        if (a >= 2 ** 10) return sign + fix(a / 2 ** 10) + ' KiB';
        return sign + a.toFixed(0) + ' B';
    }
    if (a >= 1e9) return sign + fix(a / 1e9) + ' G';
    if (a >= 1e6) return sign + fix(a / 1e6) + ' M';
    if (a >= 1e4) return sign + fix(a / 1e3) + ' k';
    return sign + String(Math.round(a));
}

function formatCores(v, { sample, perSecond }) {
    const x = v * (TIME_NS[sample] || 1) / 1e9 / perSecond;
    const a = Math.abs(x);
    const t = a === 0 ? '0' : a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toPrecision(3);
    return `${t} cores`;
}

/** The unit flame graphs, tables and tooltips take (formatValue): the sample unit, or CPU time as
 *  cores over perSecond seconds when perSecond > 0 and the unit is a time. */
export function displayUnit(sampleUnit, perSecond) {
    return perSecond > 0 && sampleUnit in TIME_NS ? { sample: sampleUnit, perSecond } : sampleUnit;
}

/** 0.1234 -> "12.34%" */
export function formatPercent(share) {
    if (!Number.isFinite(share)) return '';
    return (share * 100).toFixed(2) + '%';
}

// ---- model -------------------------------------------------------------------------------------

/** The compact JSON -> flat arrays (see the file comment). Throws on a malformed shape. */
export function decode(fg, diff) {
    if (!fg || !Array.isArray(fg.names) || !Array.isArray(fg.levels))
        throw new Error('flame graph: expected {names, levels}');
    const width = diff ? 7 : 4;
    let n = 0;
    for (const lv of fg.levels) {
        if (!Array.isArray(lv) || lv.length % width !== 0)
            throw new Error(`flame graph: a level of ${lv && lv.length} values is not a multiple of ${width}` +
                (diff ? '' : ' (is this a diff?)'));
        n += lv.length / width;
    }
    const m = {
        names: fg.names, diff, n, nlevels: fg.levels.length,
        x: new Float64Array(n), w: new Float64Array(n), self: new Float64Array(n),
        name: new Int32Array(n), level: new Int32Array(n), parent: new Int32Array(n),
        c0: new Int32Array(n), c1: new Int32Array(n), levelStart: new Int32Array(fg.levels.length + 1),
        lt: diff ? new Float64Array(n) : null, ls: diff ? new Float64Array(n) : null,
        rt: diff ? new Float64Array(n) : null, rs: diff ? new Float64Array(n) : null,
        total: 0, whole: 0, leftTicks: 0, rightTicks: 0, nameIndex: null,
    };
    let i = 0;
    fg.levels.forEach((lv, L) => {
        m.levelStart[L] = i;
        let le = 0, re = 0;
        for (let k = 0; k < lv.length; k += width, i++) {
            m.level[i] = L;
            m.name[i] = lv[k + width - 1];
            m.c0[i] = m.c1[i] = 0;
            if (diff) {
                const lx = le + lv[k], rx = re + lv[k + 3];
                le = lx + lv[k + 1];
                re = rx + lv[k + 4];
                m.lt[i] = lv[k + 1]; m.ls[i] = lv[k + 2]; m.rt[i] = lv[k + 4]; m.rs[i] = lv[k + 5];
                m.x[i] = lx + rx;
                m.w[i] = lv[k + 1] + lv[k + 4];
                m.self[i] = lv[k + 2] + lv[k + 5];
            } else {
                m.x[i] = le + lv[k];
                m.w[i] = lv[k + 1];
                m.self[i] = lv[k + 2];
                le = m.x[i] + m.w[i];
            }
        }
    });
    m.levelStart[m.nlevels] = n;
    link(m);
    m.total = n ? m.w[0] : 0;
    m.whole = typeof fg.whole === 'number' ? fg.whole : m.total;
    if (diff) {
        m.leftTicks = typeof fg.left_ticks === 'number' ? fg.left_ticks : (n ? m.lt[0] : 0);
        m.rightTicks = typeof fg.right_ticks === 'number' ? fg.right_ticks : (n ? m.rt[0] : 0);
    }
    return m;
}

// parent of each node: the node of the level above whose range holds its x (both sorted by x)
function link(m) {
    m.parent[0] = -1;
    for (let L = 1; L < m.nlevels; L++) {
        let p = m.levelStart[L - 1];
        const pEnd = m.levelStart[L];
        for (let i = m.levelStart[L]; i < m.levelStart[L + 1]; i++) {
            while (p < pEnd - 1 && m.x[i] >= m.x[p] + m.w[p] && !(m.w[p] === 0 && m.x[i] === m.x[p]))
                p++;
            m.parent[i] = p;
            if (m.c1[p] === 0) m.c0[p] = i;
            m.c1[p] = i + 1;
        }
    }
}

/** Names from the root's child down to node i. */
export function pathOf(m, i) {
    const path = [];
    for (; i > 0; i = m.parent[i]) path.push(m.names[m.name[i]]);
    return path.reverse();
}

/** The node at path (array of names from the root's child down), or -1. */
export function nodeAt(m, path) {
    if (!m.n) return -1;
    let i = 0;
    for (const name of path || []) {
        let found = -1;
        for (let c = m.c0[i]; c < m.c1[i]; c++)
            if (m.names[m.name[c]] === name) { found = c; break; }
        if (found < 0) return -1;
        i = found;
    }
    return i;
}

// relative change of a diff node's value (Infinity: new, -1: gone)
function diffChange(m, i) {
    const l = m.lt[i], r = m.rt[i];
    if (l === 0) return r === 0 ? 0 : Infinity;
    return (r - l) / l;
}

// ---- colours -----------------------------------------------------------------------------------

/** The package/module part of a function name (what the colour is keyed by). */
export function packageOf(name) {
    let s = name;
    const paren = s.indexOf('(');
    const slash = s.lastIndexOf('/', paren >= 0 ? paren : s.length);
    const head = slash >= 0 ? s.slice(0, slash + 1) : '';
    let rest = slash >= 0 ? s.slice(slash + 1) : s;
    const cut = [rest.indexOf('::'), rest.indexOf('.'), rest.indexOf(':'), rest.indexOf(' ')]
        .filter((k) => k > 0);
    if (cut.length) rest = rest.slice(0, Math.min(...cut));
    return head + rest;
}

function fnv1a(s) {
    let h = 0x811c9dc5;
    for (let k = 0; k < s.length; k++) {
        h ^= s.charCodeAt(k);
        h = Math.imul(h, 0x01000193);
    }
    return h >>> 0;
}

function cssVar(style, name, fallback) {
    const v = style.getPropertyValue(name).trim();
    return v || fallback;
}

function readTheme(el) {
    const st = getComputedStyle(el);
    return {
        sat: parseFloat(cssVar(st, '--flame-sat', '55')),
        light: parseFloat(cssVar(st, '--flame-light', '62')),
        text: cssVar(st, '--flame-text', '#111'),
        dim: cssVar(st, '--flame-dim', '#c8c8c8'),
        dimText: cssVar(st, '--flame-dim-text', '#666'),
        match: cssVar(st, '--flame-match', '#c026d3'),
        highlight: cssVar(st, '--flame-highlight', '#2563eb'),
        hover: cssVar(st, '--flame-hover', '#000'),
        focus: cssVar(st, '--flame-focus', '#2563eb'),
        neutral: cssVar(st, '--flame-diff-neutral', 'hsl(0, 0%, 72%)'),
        font: cssVar(st, '--flame-font', `${FONT_PX}px ui-monospace, SFMono-Regular, Menlo, monospace`),
    };
}

// ---- the component -----------------------------------------------------------------------------

function el(tag, attrs = {}, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
        if (k === 'class') e.className = v;
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
}

export class FlameGraph {
    /**
     * container: an element the graph fills (its width is the canvas width).
     * opts: onZoom(path), onSelect(name) (a frame was clicked or Enter'd), onHover(info | null),
     * onSearch(pattern) and onInvert(bool) (from the built-in controls), controls (default true:
     * a search box and a root-at-bottom toggle in the graph's bar; false when the page has its own),
     * title (a label for the graph, e.g. "callers"), onMenu(name, x, y) (right click or Shift+F10 /
     * the context-menu key on a frame: the page opens its menu there).
     */
    constructor(container, opts = {}) {
        this.container = container;
        this.opts = opts;
        this.m = null;
        this.unit = '';
        this.files = null;
        this.zoomIdx = 0;
        this.inverted = false;
        this.re = null;
        this.matchSet = null;
        this.hl = null;
        this.hoverIdx = -1;
        this.focusIdx = -1;
        this.lastDrawMs = 0;
        this.lastDrawNodes = 0;
        this.colorCache = null;
        this._raf = 0;
        this._build();
    }

    _build() {
        const c = this.container;
        c.classList.add('flame');
        this.crumbs = el('nav', { class: 'flame-crumbs', 'aria-label': 'zoom path' });
        this.summary = el('span', { class: 'flame-summary' });
        const bar = el('div', { class: 'flame-bar' }, this.crumbs, this.summary);
        if (this.opts.title) bar.prepend(el('span', { class: 'flame-title' }, this.opts.title));
        if (this.opts.controls !== false) {
            this.searchInput = el('input', {
                class: 'flame-search', type: 'search', placeholder: 'search (regex)',
                'aria-label': 'search frames (regular expression)', spellcheck: 'false',
            });
            this.searchInfo = el('span', { class: 'flame-search-info', 'aria-live': 'polite' });
            this.searchInput.addEventListener('input', () => {
                const r = this.search(this.searchInput.value);
                if (this.opts.onSearch) this.opts.onSearch(this.searchInput.value);
                return r;
            });
            this.invertBox = el('input', { type: 'checkbox', class: 'flame-invert' });
            this.invertBox.addEventListener('change', () => {
                this.setInverted(this.invertBox.checked);
                if (this.opts.onInvert) this.opts.onInvert(this.inverted);
            });
            const lab = el('label', { class: 'flame-invert-label' }, this.invertBox, ' root at bottom');
            bar.append(el('span', { class: 'flame-controls' }, this.searchInput, this.searchInfo, lab));
        }
        this.canvas = el('canvas', {
            class: 'flame-canvas', tabindex: '0', role: 'img',
            'aria-label': 'flame graph; arrows move, Enter zooms, Escape zooms out, Shift+F10 opens the frame\'s menu',
        });
        this.overlay = el('canvas', { class: 'flame-overlay', 'aria-hidden': 'true' });
        this.tip = el('div', { class: 'flame-tip', role: 'tooltip', hidden: '' });
        this.empty = el('div', { class: 'flame-empty', hidden: '' });
        this.wrap = el('div', { class: 'flame-wrap' }, this.canvas, this.overlay, this.tip, this.empty);
        c.append(bar, this.wrap);

        this._onMove = (ev) => this._hover(ev);
        this._onLeave = () => this._setHover(-1, null);
        this._onClick = (ev) => this._click(ev);
        this._onKey = (ev) => this._key(ev);
        this.canvas.addEventListener('mousemove', this._onMove);
        this.canvas.addEventListener('mouseleave', this._onLeave);
        this.canvas.addEventListener('click', this._onClick);
        this.canvas.addEventListener('keydown', this._onKey);
        this.canvas.addEventListener('contextmenu', (ev) => this._menu(ev));
        this.canvas.addEventListener('blur', () => {
            if (this._menuFrom >= 0) { // the keyboard's menu took focus: the frame stays focused for its return
                this._menuFrom = -1;
                this.tip.hidden = true;
                return;
            }
            this.focusIdx = -1;
            this.tip.hidden = true;
            if (this.m) this._overlay();
        });
        this._ro = new ResizeObserver(() => this._schedule());
        this._ro.observe(this.wrap);
        this._mq = window.matchMedia('(prefers-color-scheme: dark)');
        this._onScheme = () => this.refreshTheme();
        this._mq.addEventListener('change', this._onScheme);
        window.addEventListener('ps-theme', this._onScheme); // the header's theme picker (settings.js)
    }

    /**
     * fg: the JSON of format=flamegraph (or a tree from sandwich()). unit: the sample unit
     * ("nanoseconds", "bytes", "count", ...). diff: 7 values per node. inverted: root at bottom.
     * files: optional Map function name -> file (e.g. from the top table's rows), shown on hover.
     */
    setData(fg, { unit = '', diff = false, inverted = this.inverted, files = null } = {}) {
        this.m = decode(fg, diff);
        this.unit = unit;
        this.files = files;
        this.inverted = !!inverted;
        if (this.invertBox) this.invertBox.checked = this.inverted;
        this.zoomIdx = 0;
        this.hoverIdx = -1;
        this.focusIdx = -1;
        this.colorCache = null;
        this.matchSet = null;
        this.hl = null;
        if (this.re) this._computeMatches();
        this._crumbs();
        this.draw();
    }

    /** path: frame names from the root's child down ([] = root). Returns false when not found. */
    zoom(path) {
        if (!this.m) return false;
        const i = nodeAt(this.m, path);
        if (i < 0) return false;
        this.zoomIdx = i;
        this.focusIdx = -1;
        this._crumbs();
        this.draw();
        return true;
    }

    /** The zoomed node: { path, name, total, self, share } (share of the whole graph). */
    get zoomed() { return this.m ? this.info(this.zoomIdx) : null; }

    /** Highlights the frames whose name matches the regex; '' clears. */
    search(pattern) {
        let error = null;
        this.re = null;
        if (pattern) {
            try { this.re = new RegExp(pattern); } catch (e) { error = e.message; }
        }
        if (this.searchInput) {
            if (this.searchInput.value !== (pattern || '')) this.searchInput.value = pattern || '';
            this.searchInput.toggleAttribute('aria-invalid', !!error);
        }
        const r = this._computeMatches();
        if (error) r.error = error;
        if (this.searchInfo) {
            this.searchInfo.textContent = error ? 'bad regex: ' + error
                : this.re ? `${r.matches} frames, ${formatValue(r.total, this.unit)} (${formatPercent(r.share)})` : '';
        }
        this.draw();
        return r;
    }

    // the nodes whose names match; total counts nested matches once (only the outermost)
    _computeMatches() {
        const res = { matches: 0, total: 0, share: 0 };
        this.matchSet = null;
        this.lastSearch = res;
        const m = this.m;
        if (!this.re || !m) return res;
        const re = this.re;
        const byName = new Int8Array(m.names.length);
        m.names.forEach((s, k) => { byName[k] = re.test(s) ? 1 : 0; });
        const hit = new Uint8Array(m.n);
        const under = new Uint8Array(m.n); // a strict ancestor matched
        for (let i = 1; i < m.n; i++) {
            const p = m.parent[i];
            under[i] = under[p] | hit[p];
            if (byName[m.name[i]]) {
                hit[i] = 1;
                res.matches++;
                if (!under[i]) res.total += m.diff ? m.rt[i] : m.w[i];
            }
        }
        const whole = m.diff ? m.rightTicks : m.whole;
        res.share = whole ? res.total / whole : 0;
        if (m.diff) {
            res.baseTotal = 0;
            for (let i = 1; i < m.n; i++) if (hit[i] && !under[i]) res.baseTotal += m.lt[i];
        }
        this.matchSet = hit;
        this.lastSearch = res;
        return res;
    }

    /** Marks the frames of one function (e.g. the top table's selected row); null clears. */
    highlight(name) {
        this.hl = name || null;
        this.draw();
    }

    /** Re-reads the CSS variables and redraws (called on prefers-color-scheme changes; call it
     *  after switching a theme class by hand). */
    refreshTheme() {
        this.theme = null;
        this.colorCache = null;
        this._schedule();
    }

    setInverted(b) {
        this.inverted = !!b;
        if (this.invertBox) this.invertBox.checked = this.inverted;
        this.draw();
    }

    /** What hover shows for node i. */
    info(i) {
        const m = this.m;
        if (!m || i < 0 || i >= m.n) return null;
        const name = m.names[m.name[i]];
        const o = {
            index: i, name, path: pathOf(m, i), file: (this.files && this.files.get(name)) || '',
            total: m.w[i], self: m.self[i], share: m.whole ? m.w[i] / m.whole : 0,
            selfShare: m.whole ? m.self[i] / m.whole : 0, unit: this.unit,
        };
        if (m.diff) {
            Object.assign(o, {
                baseTotal: m.lt[i], baseSelf: m.ls[i], compareTotal: m.rt[i], compareSelf: m.rs[i],
                baseShare: m.leftTicks ? m.lt[i] / m.leftTicks : 0,
                compareShare: m.rightTicks ? m.rt[i] / m.rightTicks : 0, change: diffChange(m, i),
            });
        }
        return o;
    }

    // ---- geometry ----

    _view() {
        const m = this.m;
        const W = Math.max(1, this.wrap.clientWidth || this.container.clientWidth || 800);
        const zx = m.x[this.zoomIdx], zw = m.w[this.zoomIdx] || 1;
        return { W, H: m.nlevels * ROW, zx, zw, scale: W / zw };
    }

    _rowY(L) { return (this.inverted ? this.m.nlevels - 1 - L : L) * ROW; }

    /** The box of node i in CSS px relative to the canvas ({x, y, w, h}), or null when not drawn. */
    rectOf(i) {
        const m = this.m;
        if (typeof i !== 'number') i = nodeAt(m, i);
        if (!m || i < 0) return null;
        const v = this._view();
        const x0 = Math.max(m.x[i], v.zx), x1 = Math.min(m.x[i] + m.w[i], v.zx + v.zw);
        if (x1 <= x0) return null;
        const w = (x1 - x0) * v.scale;
        if (w < MIN_PX) return null;
        return { x: (x0 - v.zx) * v.scale, y: this._rowY(m.level[i]), w, h: ROW };
    }

    /** The node drawn at CSS px (px, py) of the canvas, or -1. */
    hit(px, py) {
        const m = this.m;
        if (!m || !m.n) return -1;
        const row = Math.floor(py / ROW);
        const L = this.inverted ? m.nlevels - 1 - row : row;
        if (L < 0 || L >= m.nlevels) return -1;
        const v = this._view();
        const dx = v.zx + px / v.scale;
        let lo = m.levelStart[L], hi = m.levelStart[L + 1] - 1;
        while (lo < hi) { // the last node with x <= dx
            const mid = (lo + hi + 1) >> 1;
            if (m.x[mid] <= dx) lo = mid; else hi = mid - 1;
        }
        if (lo > hi || m.x[lo] > dx || dx >= m.x[lo] + m.w[lo]) return -1;
        return this.rectOf(lo) ? lo : -1;
    }

    // ---- drawing ----

    _schedule() {
        if (this._raf) return;
        this._raf = requestAnimationFrame(() => { this._raf = 0; this.draw(); });
    }

    _color(i, t) {
        const m = this.m;
        if (m.diff) {
            const ch = diffChange(m, i);
            if (ch === 0) return t.neutral;
            const k = Math.min(1, Math.abs(ch));
            const hue = ch > 0 ? 0 : 130;
            return `hsl(${hue}, ${(20 + 65 * k).toFixed(0)}%, ${(t.light + 14 * (1 - k)).toFixed(0)}%)`;
        }
        if (!this.colorCache) this.colorCache = new Array(m.names.length);
        const k = m.name[i];
        let c = this.colorCache[k];
        if (c === undefined) {
            const h = fnv1a(packageOf(m.names[k]));
            c = `hsl(${h % 360}, ${t.sat + ((h >>> 9) % 15)}%, ${t.light + ((h >>> 17) % 8) - 4}%)`;
            this.colorCache[k] = c;
        }
        return c;
    }

    // the boxes of the current view: calls f(i, x, y, w, fill, textColor, label or '')
    _boxes(t, charW, f) {
        const m = this.m;
        const v = this._view();
        const zl = m.level[this.zoomIdx];
        const x1z = v.zx + v.zw;
        for (let L = 0; L < m.nlevels; L++) {
            const y = this._rowY(L);
            let lo = m.levelStart[L], hi = m.levelStart[L + 1];
            let a = lo, b = hi; // first node ending after zx
            while (a < b) {
                const mid = (a + b) >> 1;
                if (m.x[mid] + m.w[mid] <= v.zx) a = mid + 1; else b = mid;
            }
            for (let i = a; i < hi; i++) {
                const nx = m.x[i];
                if (nx >= x1z) break;
                const x0 = Math.max(nx, v.zx), x1 = Math.min(nx + m.w[i], x1z);
                const w = (x1 - x0) * v.scale;
                if (w < MIN_PX) continue;
                const px = (x0 - v.zx) * v.scale;
                let fill, tc = t.text;
                const name = m.names[m.name[i]];
                if (this.matchSet) {
                    if (this.matchSet[i]) fill = t.match; else { fill = t.dim; tc = t.dimText; }
                } else {
                    fill = this._color(i, t);
                }
                let dimmed = L < zl;
                if (this.hl) {
                    if (name === this.hl) { fill = t.highlight; tc = '#fff'; dimmed = false; } else dimmed = true;
                }
                let label = '';
                if (w > 3 * charW + 6) {
                    const max = Math.floor((w - 6) / charW);
                    label = name.length <= max ? name : name.slice(0, Math.max(1, max - 1)) + '…';
                }
                f(i, px, y, w, fill, tc, label, dimmed);
            }
        }
    }

    /** Redraws the whole graph; sets lastDrawMs. */
    draw() {
        const t0 = performance.now();
        const m = this.m;
        if (!m) return;
        if (!m.n || m.total === 0 && !m.diff) {
            this.empty.hidden = false;
            this.empty.textContent = 'no samples in this selection';
        } else {
            this.empty.hidden = true;
        }
        const t = this.theme || (this.theme = readTheme(this.container));
        const v = this._view();
        const dpr = window.devicePixelRatio || 1;
        for (const cv of [this.canvas, this.overlay]) {
            const bw = Math.round(v.W * dpr), bh = Math.round(Math.max(v.H, ROW) * dpr);
            if (cv.width !== bw) cv.width = bw;
            if (cv.height !== bh) cv.height = bh;
            cv.style.width = v.W + 'px';
            cv.style.height = Math.max(v.H, ROW) + 'px';
        }
        const ctx = this.canvas.getContext('2d');
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.clearRect(0, 0, v.W, v.H);
        ctx.font = t.font;
        ctx.textBaseline = 'middle';
        const charW = this._charW || (this._charW = ctx.measureText('abcdefghij').width / 10 || 7);
        let drawn = 0;
        this._boxes(t, charW, (i, x, y, w, fill, tc, label, dimmed) => {
            ctx.globalAlpha = dimmed ? (this.hl ? 0.35 : 0.55) : 1;
            ctx.fillStyle = fill;
            ctx.fillRect(x, y, w > 2 ? w - 0.5 : w, ROW - 1);
            if (label) {
                ctx.fillStyle = tc;
                ctx.fillText(label, x + 3, y + ROW / 2);
            }
            drawn++;
        });
        ctx.globalAlpha = 1;
        this.lastDrawNodes = drawn;
        this._overlay();
        this.lastDrawMs = performance.now() - t0;
        this.container.dataset.drawMs = this.lastDrawMs.toFixed(2);
        this.container.dataset.nodes = String(drawn);
    }

    _overlay() {
        const ctx = this.overlay.getContext('2d');
        const dpr = window.devicePixelRatio || 1;
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.clearRect(0, 0, this.overlay.width / dpr, this.overlay.height / dpr);
        const t = this.theme || readTheme(this.container);
        const stroke = (i, color, lw) => {
            const r = this.rectOf(i);
            if (!r) return;
            ctx.strokeStyle = color;
            ctx.lineWidth = lw;
            ctx.strokeRect(r.x + lw / 2, r.y + lw / 2, Math.max(1, r.w - lw - 0.5), ROW - 1 - lw);
        };
        if (this.focusIdx >= 0) stroke(this.focusIdx, t.focus, 2);
        if (this.hoverIdx >= 0) stroke(this.hoverIdx, t.hover, 1);
    }

    _crumbs() {
        const m = this.m;
        this.crumbs.textContent = '';
        const chain = [];
        for (let i = this.zoomIdx; i >= 0; i = m.parent[i]) chain.push(i);
        chain.reverse().forEach((i, k) => {
            if (k) this.crumbs.append(el('span', { class: 'flame-crumb-sep', 'aria-hidden': 'true' }, '›'));
            const b = el('button', { type: 'button', class: 'flame-crumb' }, m.names[m.name[i]]);
            if (i === this.zoomIdx) b.setAttribute('aria-current', 'true');
            b.addEventListener('click', () => this._zoomTo(i));
            this.crumbs.append(b);
        });
        const z = this.info(this.zoomIdx);
        const u = this.unit;
        if (!z) this.summary.textContent = '';
        else if (m.diff) {
            this.summary.textContent = `baseline ${formatValue(z.baseTotal, u)} (${formatPercent(z.baseShare)}) → ` +
                `comparison ${formatValue(z.compareTotal, u)} (${formatPercent(z.compareShare)})`;
        } else this.summary.textContent = `${formatValue(z.total, u)} (${formatPercent(z.share)})`;
        this.summary.dataset.total = z ? String(z.total) : '';
    }

    _zoomTo(i) {
        this.zoomIdx = i;
        this.focusIdx = -1; // the keyboard goes on from the zoomed node
        this._crumbs();
        this.draw();
        if (this.opts.onZoom) this.opts.onZoom(pathOf(this.m, i));
    }

    // ---- interaction ----

    _pos(ev) {
        const r = this.canvas.getBoundingClientRect();
        return [ev.clientX - r.left, ev.clientY - r.top];
    }

    _hover(ev) {
        const [px, py] = this._pos(ev);
        const i = this.hit(px, py);
        this._setHover(i, { cx: ev.clientX, cy: ev.clientY });
    }

    _setHover(i, at) {
        if (i !== this.hoverIdx) {
            this.hoverIdx = i;
            this._overlay();
            const info = i >= 0 ? this.info(i) : null;
            if (info) this._tipText(info); else this.tip.hidden = true;
            if (this.opts.onHover) this.opts.onHover(info);
        }
        if (i >= 0 && at) this._placeTip(at.cx, at.cy);
    }

    // the tooltip is position: fixed (never clipped by a scrolling parent), kept inside the window
    _placeTip(cx, cy) {
        const tw = this.tip.offsetWidth || 260, th = this.tip.offsetHeight || 80;
        const left = Math.max(0, Math.min(cx + 14, window.innerWidth - tw - 4));
        const top = cy + 16 + th > window.innerHeight ? Math.max(0, cy - th - 8) : cy + 16;
        this.tip.style.left = left + 'px';
        this.tip.style.top = top + 'px';
    }

    _tipText(o) {
        const u = this.unit;
        const rows = [['total', `${formatValue(o.total, u)} (${formatPercent(o.share)})`],
            ['self', `${formatValue(o.self, u)} (${formatPercent(o.selfShare)})`]];
        if (this.m.diff) {
            rows.length = 0;
            rows.push(['baseline', `${formatValue(o.baseTotal, u)} (${formatPercent(o.baseShare)})`],
                ['comparison', `${formatValue(o.compareTotal, u)} (${formatPercent(o.compareShare)})`],
                ['change', o.change === Infinity ? 'new' : (o.change > 0 ? '+' : '') + formatPercent(o.change)],
                ['self', `${formatValue(o.baseSelf, u)} → ${formatValue(o.compareSelf, u)}`]);
        }
        this.tip.textContent = '';
        this.tip.append(el('div', { class: 'flame-tip-name' }, o.name));
        if (o.file) this.tip.append(el('div', { class: 'flame-tip-file' }, o.file));
        const dl = el('dl');
        for (const [k, v] of rows) dl.append(el('dt', {}, k), el('dd', {}, v));
        this.tip.append(dl);
        this.tip.hidden = false;
    }

    _click(ev) {
        const [px, py] = this._pos(ev);
        const i = this.hit(px, py);
        if (i < 0) return;
        this._zoomTo(i);
        if (this.opts.onSelect && i > 0) this.opts.onSelect(this.m.names[this.m.name[i]]);
    }

    // right click on a frame: opts.onMenu(name, x, y) (the browser's menu elsewhere)
    _menu(ev) {
        if (!this.opts.onMenu || !this.m) return;
        const [px, py] = this._pos(ev);
        const i = this.hit(px, py);
        if (i <= 0) return;
        ev.preventDefault();
        this.tip.hidden = true;
        this.opts.onMenu(this.m.names[this.m.name[i]], ev.clientX, ev.clientY);
    }

    _key(ev) {
        const m = this.m;
        if (!m || !m.n) return;
        let f = this.focusIdx >= 0 ? this.focusIdx : this.zoomIdx;
        // the context-menu key or Shift+F10: the menu of the focused frame
        if ((ev.key === 'ContextMenu' || (ev.key === 'F10' && ev.shiftKey)) && this.opts.onMenu) {
            if (f <= 0) return;
            ev.preventDefault();
            const r = this.rectOf(f), cr = this.canvas.getBoundingClientRect();
            this.tip.hidden = true;
            this._menuFrom = f;
            this.opts.onMenu(m.names[m.name[f]], cr.left + (r ? r.x : 0), cr.top + (r ? r.y + ROW : 0));
            return;
        }
        const down = this.inverted ? 'ArrowUp' : 'ArrowDown', up = this.inverted ? 'ArrowDown' : 'ArrowUp';
        const L = m.level[f];
        switch (ev.key) {
        case down: if (m.c1[f] > m.c0[f]) f = m.c0[f]; break;
        case up: if (m.parent[f] >= 0) f = m.parent[f]; break;
        case 'ArrowLeft': if (f > m.levelStart[L]) f--; break;
        case 'ArrowRight': if (f + 1 < m.levelStart[L + 1]) f++; break;
        case 'Enter': this._zoomTo(f); if (this.opts.onSelect && f > 0) this.opts.onSelect(m.names[m.name[f]]); break;
        case 'Escape': if (m.parent[this.zoomIdx] >= 0) this._zoomTo(m.parent[this.zoomIdx]); break;
        default: return;
        }
        ev.preventDefault();
        if (!this.rectOf(f)) return;
        this.focusIdx = f;
        this._overlay();
        const r = this.rectOf(f), cr = this.canvas.getBoundingClientRect();
        this._tipText(this.info(f));
        this._placeTip(cr.left + r.x, cr.top + r.y + 2);
    }

    // ---- export ----

    /** The current view as a standalone SVG document (string). */
    toSVG() {
        const m = this.m;
        const t = this.theme || readTheme(this.container);
        const v = m ? this._view() : { W: 1, H: ROW };
        const esc = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
        const fontFamily = t.font.replace(/^\s*[\d.]+px\s*/, '');
        const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${v.W}" height="${v.H}" ` +
            `viewBox="0 0 ${v.W} ${v.H}" font-family="${esc(fontFamily)}" font-size="${FONT_PX}">`];
        if (m) {
            const charW = this._charW || 7;
            this._boxes(t, charW, (i, x, y, w, fill, tc, label, dimmed) => {
                const o = this.info(i), u = this.unit;
                const title = m.diff ? `${o.name}: ${formatValue(o.baseTotal, u)} → ${formatValue(o.compareTotal, u)} ` +
                    `(${o.change === Infinity ? 'new' : (o.change > 0 ? '+' : '') + formatPercent(o.change)})`
                    : `${o.name}: ${formatValue(o.total, u)} (${formatPercent(o.share)})`;
                out.push(`<g${dimmed ? (this.hl ? ' opacity="0.35"' : ' opacity="0.55"') : ''}><title>${esc(title)}</title>` +
                    `<rect x="${x.toFixed(2)}" y="${y}" width="${(w > 2 ? w - 0.5 : w).toFixed(2)}" ` +
                    `height="${ROW - 1}" fill="${fill}"/>` +
                    (label ? `<text x="${(x + 3).toFixed(2)}" y="${y + ROW / 2}" dominant-baseline="middle" ` +
                        `fill="${tc}">${esc(label)}</text>` : '') + '</g>');
            });
        }
        out.push('</svg>');
        return out.join('\n');
    }

    /** The current view as a PNG. */
    toPNG() {
        return new Promise((resolve, reject) => {
            this.canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('flame graph: PNG export failed'))),
                'image/png');
        });
    }

    destroy() {
        this._ro.disconnect();
        this._mq.removeEventListener('change', this._onScheme);
        window.removeEventListener('ps-theme', this._onScheme);
        if (this._raf) cancelAnimationFrame(this._raf);
        this.container.textContent = '';
        this.container.classList.remove('flame');
        this.m = null;
    }
}
