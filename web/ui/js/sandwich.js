// sandwich.js - the sandwich view of one function: who calls it (above) and what it calls (below),
// as Pyroscope and Parca show it, computed in the browser from the flame graph JSON.
//
// The occurrences of the function that count are the outermost ones (no ancestor is the function
// itself), so recursion is counted once, as pprof counts cum. Callees: the subtrees of those
// occurrences merged by name into one tree rooted at the function. Callers: an inverted tree rooted at
// the function whose children are the direct callers, their children the callers' callers, up to (not
// including) the root "total"; every occurrence adds its total along its caller chain. Level 1 of each
// tree is what `go tool pprof -peek` prints above and below the function. Both trees are returned in
// the compact shape of format=flamegraph (the function is names[0], the root; children are laid out
// after their parent's self, as the server does), with `whole` = the total of the full graph so that
// percentages stay "of the whole", and a diff keeps 7 values per node and the original ticks.

import { decode, FlameGraph } from './flame.js';

// a merge tree: { name, v: [total, self] per side, kids: Map name -> node }
function node(name, sides) {
    return { name, t: new Array(sides).fill(0), s: new Array(sides).fill(0), kids: new Map() };
}

function child(p, name, sides) {
    let c = p.kids.get(name);
    if (!c) { c = node(name, sides); p.kids.set(name, c); }
    return c;
}

function vals(m, i) {
    return m.diff ? { t: [m.lt[i], m.rt[i]], s: [m.ls[i], m.rs[i]] } : { t: [m.w[i]], s: [m.self[i]] };
}

function add(dst, src, self) {
    for (let k = 0; k < dst.t.length; k++) {
        dst.t[k] += src.t[k];
        if (self) dst.s[k] += src.s[k];
    }
}

// merges the subtree of model node i into tree node into
function mergeSubtree(m, i, into) {
    add(into, vals(m, i), true);
    for (let c = m.c0[i]; c < m.c1[i]; c++)
        mergeSubtree(m, c, child(into, m.names[m.name[c]], into.t.length));
}

// self of every callers-tree node: its total minus its children's (the chains that end there)
function fixSelf(n) {
    for (let k = 0; k < n.t.length; k++) {
        let sum = 0;
        for (const c of n.kids.values()) sum += c.t[k];
        n.s[k] = n.t[k] - sum;
    }
    for (const c of n.kids.values()) fixSelf(c);
}

// tree -> compact JSON: levels breadth-first, children sorted by name after the parent's self
function encode(root, diff, whole, ticks) {
    const names = [], index = new Map();
    const id = (s) => {
        let k = index.get(s);
        if (k === undefined) { k = names.length; names.push(s); index.set(s, k); }
        return k;
    };
    id(root.name);
    const sides = diff ? 2 : 1;
    const levels = [];
    let maxSelf = 0;
    let row = [{ n: root, x: new Array(sides).fill(0) }];
    while (row.length) {
        const lv = [], next = [], prevEnd = new Array(sides).fill(0);
        for (const { n, x } of row) {
            for (let k = 0; k < sides; k++) {
                lv.push(x[k] - prevEnd[k], n.t[k], n.s[k]);
                prevEnd[k] = x[k] + n.t[k];
                maxSelf = Math.max(maxSelf, n.s[k]);
            }
            lv.push(id(n.name));
            const cx = x.map((v, k) => v + n.s[k]);
            for (const c of [...n.kids.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
                next.push({ n: c, x: cx.slice() });
                for (let k = 0; k < sides; k++) cx[k] += c.t[k];
            }
        }
        levels.push(lv);
        row = next;
    }
    const out = { names, levels, total: root.t.reduce((a, b) => a + b, 0), max_self: maxSelf, whole };
    if (diff) Object.assign(out, { left_ticks: ticks[0], right_ticks: ticks[1] });
    return out;
}

/**
 * fg: the JSON of format=flamegraph (diff: pass { diff: true }); name: the function.
 * Returns { callers, callees } (fg-like trees; both have the function as root, total 0 when absent).
 */
export function sandwich(fg, name, { diff = false } = {}) {
    const m = fg && fg.levels && fg.names ? decode(fg, diff) : fg; // a decoded model is accepted too
    const sides = m.diff ? 2 : 1;
    const callees = node(name, sides), callers = node(name, sides);
    const target = m.names.indexOf(name);
    if (target >= 0) {
        const under = new Uint8Array(m.n); // an ancestor (or the node itself) is the function
        for (let i = 1; i < m.n; i++) {
            const p = m.parent[i];
            const isT = m.name[i] === target;
            under[i] = under[p] | (isT ? 1 : 0);
            if (!isT || under[p]) continue;
            mergeSubtree(m, i, callees);
            const v = vals(m, i);
            add(callers, v, false);
            let at = callers;
            for (let a = p; a > 0; a = m.parent[a]) {
                at = child(at, m.names[m.name[a]], sides);
                add(at, v, false);
            }
        }
        fixSelf(callers);
    }
    const ticks = m.diff ? [m.leftTicks, m.rightTicks] : null;
    return {
        callers: encode(callers, m.diff, m.whole, ticks),
        callees: encode(callees, m.diff, m.whole, ticks),
    };
}

/** Two flame graphs for one function: callers above (root at the bottom), callees below. */
export class Sandwich {
    /** opts: onSelect(name) (a caller or callee was clicked: show that function instead), onHover. */
    constructor(container, opts = {}) {
        this.container = container;
        this.opts = opts;
        container.classList.add('sandwich');
        this.head = document.createElement('div');
        this.head.className = 'sandwich-head';
        const top = document.createElement('div');
        const bottom = document.createElement('div');
        top.className = 'sandwich-callers';
        bottom.className = 'sandwich-callees';
        container.append(this.head, top, bottom);
        const pick = (name) => {
            if (name && name !== this.name && this.opts.onSelect) this.opts.onSelect(name);
        };
        this.callersGraph = new FlameGraph(top, { controls: false, title: 'callers', onSelect: pick, onHover: opts.onHover });
        this.calleesGraph = new FlameGraph(bottom, { controls: false, title: 'callees', onSelect: pick, onHover: opts.onHover });
        this.name = null;
        this.data = null;
    }

    /** fg: the JSON of format=flamegraph; name: the function; null name empties the view. */
    setData(fg, name, { unit = '', diff = false, files = null } = {}) {
        this.name = name;
        if (!name) {
            this.head.textContent = 'select a function (in the table or the flame graph) to see its callers and callees';
            this.container.classList.add('sandwich-empty');
            return;
        }
        this.container.classList.remove('sandwich-empty');
        this.data = sandwich(fg, name, { diff });
        this.head.textContent = name;
        this.callersGraph.setData(this.data.callers, { unit, diff, inverted: true, files });
        this.calleesGraph.setData(this.data.callees, { unit, diff, inverted: false, files });
    }

    destroy() {
        this.callersGraph.destroy();
        this.calleesGraph.destroy();
        this.container.textContent = '';
    }
}
