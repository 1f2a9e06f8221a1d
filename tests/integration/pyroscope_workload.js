// pyroscope_workload.js - a small Node.js program profiled by the real @pyroscope/nodejs SDK
// (found through NODE_PATH), pushing to SERVER_URL/ingest; used by test_pyroscope_nodejs.py.
//
// env: SERVER_URL (required), DURATION_MS (default 12000), FLUSH_MS (default 5000), APP_NAME
// (default nodeapp), COLLECT_CPU (1: wall profiles also carry cpu/nanoseconds, SDK 0.6),
// AUTH_TOKEN (the SDK's authToken: Authorization: Bearer), BASIC_USER + BASIC_PASSWORD (its
// basicAuthUser/basicAuthPassword, SDK 0.6).
// Last line: "pyroscope_workload: uploads ok=N failed=M statuses=[...]"; exit 0 only if every upload
// got a 2xx (the SDK itself swallows HTTP errors), 2 otherwise, 1 on a setup error.
'use strict';

const crypto = require('crypto');

const statuses = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async function (url, opts) {
  try {
    const r = await realFetch(url, opts);
    if (String(url).includes('/ingest')) statuses.push(r.status);
    return r;
  } catch (e) {
    if (String(url).includes('/ingest')) statuses.push('error: ' + (e.cause ? e.cause.code : e.message));
    throw e;
  }
};

let Pyroscope;
try {
  Pyroscope = require('@pyroscope/nodejs');
} catch (e) {
  console.error('pyroscope_workload: cannot load @pyroscope/nodejs: ' + e.message);
  process.exit(1);
}

const server = process.env.SERVER_URL;
const duration = Number(process.env.DURATION_MS || 12000);
const flush = Number(process.env.FLUSH_MS || 5000);
if (!server) {
  console.error('pyroscope_workload: SERVER_URL is not set');
  process.exit(1);
}

Pyroscope.init({
  serverAddress: server,
  appName: process.env.APP_NAME || 'nodeapp',
  tags: { env: 'test' },
  flushIntervalMs: flush,
  wall: { collectCpuTime: process.env.COLLECT_CPU === '1' },
  authToken: process.env.AUTH_TOKEN || undefined,
  basicAuthUser: process.env.BASIC_USER || undefined,
  basicAuthPassword: process.env.BASIC_PASSWORD || undefined,
});
Pyroscope.start();

const kept = [];

function psWorkloadSort() {
  const a = [];
  for (let i = 0; i < 20000; i++) a.push(Math.random());
  a.sort((x, y) => x - y);
  return a[0];
}

function psWorkloadHash() {
  let h = crypto.createHash('sha256');
  for (let i = 0; i < 200; i++) h.update('profstore-' + i);
  return h.digest('hex');
}

function psWorkloadAlloc() {
  const chunk = [];
  for (let i = 0; i < 2000; i++) chunk.push({ i, s: 'x'.repeat(32) });
  kept.push(chunk);
  if (kept.length > 200) kept.shift();
}

const end = Date.now() + duration;
function tick() {
  const until = Date.now() + 40;
  while (Date.now() < until) {
    psWorkloadSort();
    psWorkloadHash();
  }
  psWorkloadAlloc();
  if (Date.now() < end) {
    setTimeout(tick, 10);
  } else {
    Promise.resolve(Pyroscope.stop()).then(() => {
      setTimeout(() => {
        const ok = statuses.filter((s) => typeof s === 'number' && s >= 200 && s < 300).length;
        const failed = statuses.length - ok;
        console.log('pyroscope_workload: uploads ok=' + ok + ' failed=' + failed + ' statuses=' +
                    JSON.stringify(statuses));
        process.exit(failed === 0 && ok > 0 ? 0 : 2);
      }, 1000);
    });
  }
}
tick();
