// tests/wpt/rates.py's Node runner (and tests/intl402/rates.py's): each program (one WPT file as
// one classic script, see wpt_harness.py; or one test262 file, t262_harness.py) runs in a fresh
// worker thread with vm.runInThisContext, as Node's own WPT runner (test/common/wpt/worker.js)
// runs its files; the awaited value (or the error and its type) is printed as a JSON line.
// Usage: node node_runner.js JOBS.json (a list of {id, path, timeout_ms}); at most 2 at once.
'use strict';
const fs = require('fs');
const { Worker } = require('worker_threads');

const WORKER = `
const { parentPort, workerData } = require('worker_threads');
const vm = require('vm');
const program = require('fs').readFileSync(workerData.path, 'utf8');
Promise.resolve()
  .then(() => vm.runInThisContext(program, { filename: workerData.id }))
  .then((value) => parentPort.postMessage({ value }),
        (e) => parentPort.postMessage({ error: String((e && e.stack) || e), name: nameOf(e) }));
// the thrown value's type, for a negative test262 file (tests/intl402): a thrown Test262Error
// is not an Error and has no name of its own, its constructor has
function nameOf(e) {
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return '';
  try { return String(e.name || (e.constructor && e.constructor.name) || ''); } catch { return ''; }
}
`;

function run(job) {
  return new Promise((resolve) => {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: job,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    let settled = false;
    const finish = (out) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      worker.terminate();
      resolve(out);
    };
    const timer = setTimeout(() => finish({ error: 'timeout' }), job.timeout_ms);
    worker.on('message', finish);
    worker.on('error', (e) => finish({ error: String((e && e.stack) || e) }));
    worker.on('exit', (code) => finish({ error: `worker exited ${code}` }));
  });
}

async function main() {
  const jobs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      const started = Date.now();
      const out = await run(job);
      const line = JSON.stringify({ id: job.id, ms: Date.now() - started, ...out });
      process.stdout.write('@@wpt@@' + line + '\n');
    }
  };
  await Promise.all([lane(), lane()]);
}

main();
