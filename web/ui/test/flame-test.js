// test/flame-test.js - drives test/flame.html: fetches format=flamegraph and format=top for the
// page's parameters and wires FlameGraph, TopTable and Sandwich together as the app does (a table
// row highlights its frames and opens the sandwich). Exposes everything on window.T for the tests.
import { FlameGraph } from '../js/flame.js';
import { TopTable } from '../js/table.js';
import { Sandwich } from '../js/sandwich.js';

const p = new URLSearchParams(location.search);
const diff = p.get('diff') === '1';
const T = (window.T = { ready: false, error: null, zooms: [], selects: [] });

async function getJSON(path, params) {
    const r = await fetch(path + '?' + new URLSearchParams(params));
    const body = await r.text();
    if (!r.ok) throw new Error(`${path}: ${r.status} ${body}`);
    return JSON.parse(body);
}

function params(format) {
    const keys = diff ? ['base', 'base_start', 'base_end', 'compare', 'compare_start', 'compare_end']
        : ['query', 'start', 'end'];
    const o = { format };
    for (const k of keys.concat(['max_nodes'])) if (p.has(k)) o[k] = p.get(k);
    return o;
}

async function main() {
    const path = diff ? '/api/v1/profiles/diff' : '/api/v1/profiles/query';
    const [fg, top] = await Promise.all([getJSON(path, params('flamegraph')), getJSON(path, params('top'))]);
    const unit = p.get('unit') || '';
    const files = new Map(top.rows.map((r) => [r.function, r.file]));
    T.fgJson = fg;
    T.topJson = top;
    T.sandwich = new Sandwich(document.getElementById('sandwich'), {
        onSelect: (name) => select(name),
    });
    T.flame = new FlameGraph(document.getElementById('flame'), {
        onZoom: (path) => T.zooms.push(path),
        onSelect: (name) => T.selects.push(name),
    });
    T.table = new TopTable(document.getElementById('table'), { onSelect: (name) => select(name) });
    function select(name) {
        T.selected = name;
        T.flame.highlight(name);
        T.table.select(name);
        T.sandwich.setData(fg, name, { unit, diff, files });
    }
    T.select = select;
    T.flame.setData(fg, { unit, diff, files });
    T.table.setData(top, { unit, diff });
    T.sandwich.setData(fg, null, { unit, diff });
    T.ready = true;
}

main().catch((e) => {
    T.error = String(e && e.message || e);
    document.getElementById('error').textContent = T.error;
});
