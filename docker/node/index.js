// The Node.js app of docker/compose.yml: a small workload profiled by the real Pyroscope SDK
// (@pyroscope/nodejs, pinned in package.json), which pushes wall-clock and heap profiles to
// profstore's Pyroscope-compatible POST /ingest.
//
// env: PYROSCOPE_SERVER_ADDRESS (default http://profstore:7070, no trailing slash: the SDK would
// then post to //ingest), APP_NAME (default demo-node), FLUSH_MS (how often the SDK uploads,
// default 15000), DURATION_MS (0, the default: forever; else stop after that long, which the
// tests use). Every upload's HTTP status is logged, because the SDK itself swallows errors; a
// timed run ends with "demo-node: uploads ok=N failed=M" and exits 0 only if all of them got a 2xx.
'use strict';

const crypto = require('crypto');
const Pyroscope = require('@pyroscope/nodejs');

const server = process.env.PYROSCOPE_SERVER_ADDRESS || 'http://profstore:7070';
const appName = process.env.APP_NAME || 'demo-node';
const flushMs = Number(process.env.FLUSH_MS || 15000);
const durationMs = Number(process.env.DURATION_MS || 0);

let ok = 0;
let failed = 0;
const fetchOrig = globalThis.fetch;
globalThis.fetch = async (url, opts) => {
  const ingest = String(url).includes('/ingest');
  try {
    const r = await fetchOrig(url, opts);
    if (ingest) {
      if (r.ok) ok++; else failed++;
      console.log('demo-node: upload ' + r.status);
    }
    return r;
  } catch (e) {
    if (ingest) {
      failed++;
      console.log('demo-node: upload failed: ' + (e.cause ? e.cause.code : e.message));
    }
    throw e;
  }
};

Pyroscope.init({ serverAddress: server, appName, tags: { env: 'demo' }, flushIntervalMs: flushMs });
Pyroscope.start();
console.log('demo-node: pushing to ' + server + '/ingest every ' + flushMs + ' ms as ' + appName);

// Two CPU paths (parsing JSON, hashing) and a rolling set of retained objects for the heap profile.
const retained = [];
function demoParse() {
  const doc = JSON.stringify({ items: Array.from({ length: 500 }, (_, i) => ({ i, name: 'item-' + i })) });
  return JSON.parse(doc).items.length;
}
function demoHash() {
  const h = crypto.createHash('sha256');
  for (let i = 0; i < 300; i++) h.update('profstore-demo-' + i);
  return h.digest('hex');
}
function demoRetain() {
  retained.push(Array.from({ length: 1000 }, (_, i) => ({ i, s: 'x'.repeat(24) })));
  if (retained.length > 100) retained.shift();
}

const end = durationMs > 0 ? Date.now() + durationMs : Infinity;
function tick() {
  const until = Date.now() + 20; // busy 20 ms of every 100: a fifth of a core
  while (Date.now() < until) {
    demoParse();
    demoHash();
  }
  demoRetain();
  if (Date.now() < end) {
    setTimeout(tick, 80);
    return;
  }
  Promise.resolve(Pyroscope.stop()).then(() => setTimeout(() => {
    console.log('demo-node: uploads ok=' + ok + ' failed=' + failed);
    process.exit(failed === 0 && ok > 0 ? 0 : 2);
  }, 1000));
}
tick();
