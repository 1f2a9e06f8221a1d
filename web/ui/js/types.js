// types.js: the profile types the UI offers. /api/v1/profiles/types lists stored type ids
// (name:sample_type:sample_unit:period_type:period_unit[:delta]); ids that differ only in their
// period (one scraped with period space:bytes, one pushed without: the sample type stands in)
// are one measure, and the picker shows them as one entry that selects both with
// {__name__=~"id1|id2"} (the server merges them: src/query ps_query_single_type). An entry's id
// is the id the server reports such a merge under (the first with a period of its own); the
// URL's type may name any id of the entry. Entries that still read alike (only delta-ness
// differs) say so: "per interval" on the delta one, "cumulative" on the other.

// an id has no period of its own when it repeats the sample type and unit (ingest.c) or is empty
function standIn(t) {
  return (t.period_type === '' && t.period_unit === '') || (t.period_type === t.sample_type && t.period_unit === t.sample_unit);
}

function measureKey(t) { return JSON.stringify([t.name, t.sample_type, t.sample_unit, !!t.delta]); }

// groupTypes(types from the API) -> [{id, ids, name, sample_type, sample_unit, delta, aggregation, periods, label, title}]
export function groupTypes(types) {
  const by = new Map();
  for (const t of [...types].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const k = measureKey(t);
    // one measure has one aggregation over time (sum, or avg for a state at one instant)
    if (!by.has(k)) by.set(k, { ids: [], members: [], name: t.name, sample_type: t.sample_type, sample_unit: t.sample_unit, delta: !!t.delta, aggregation: t.aggregation });
    const g = by.get(k);
    g.ids.push(t.id);
    g.members.push(t);
  }
  const groups = [...by.values()];
  for (const g of groups) {
    const own = g.members.find((t) => !standIn(t));
    g.id = (own || g.members[0]).id;
    g.periods = g.members.map((t) => (standIn(t) ? 'none' : `${t.period_type}/${t.period_unit}`));
    const twin = groups.some((o) => o !== g && o.name === g.name && o.sample_type === g.sample_type && o.sample_unit === g.sample_unit);
    g.label = `${g.name} — ${g.sample_type} (${g.sample_unit})${g.delta ? ' per interval' : twin ? ' cumulative' : ''}`;
    g.title = g.ids.length > 1
      ? `${g.ids.length} stored types merged (periods ${g.periods.join(', ')}): ${g.ids.join(', ')}`
      : `${g.id}${twin ? (g.delta ? ' (delta: values per profile interval)' : ' (cumulative: values since the process started)') : ''}`;
    delete g.members;
  }
  return groups.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
}

const RE_META = /[.*+?^${}()|[\]\\]/g;

// the __name__ matcher of a group of ids: =~ over them when several
export function nameMatcher(ids) {
  if (ids.length === 1) return `__name__=${JSON.stringify(ids[0])}`;
  return `__name__=~${JSON.stringify(ids.map((x) => x.replace(RE_META, '\\$&')).join('|'))}`;
}

// selectorOf(ids, sel) -> {text, at}: the selector the server is sent for these ids and the
// user's matchers (sel, without braces), and the offset of sel in it
export function selectorOf(ids, sel) {
  const m = (sel || '').trim().replace(/^\{|\}$/g, '').trim();
  if (ids.length === 1) return { text: `${ids[0]}{${m}}`, at: ids[0].length + 1 };
  const head = `{${nameMatcher(ids)}${m ? ', ' : ''}`;
  return { text: `${head}${m}}`, at: head.length };
}

// the sample types shown first for a profile name (then the first of its entries)
const PREFERRED = ['cpu', 'inuse_space', 'delay', 'goroutine', 'goroutines', 'wall', 'samples'];

// the entry that stands for a profile name among groups (the list of one name's entries)
export function preferred(groups) {
  for (const st of PREFERRED) {
    const g = groups.find((x) => x.sample_type === st);
    if (g) return g;
  }
  return groups[0];
}
