// BullMQ's side of the benchmark, driven by tests/benchmarks/peers/bullmq_peer.py.
//
//   node bench.mjs enqueue  URL JOBS BATCH   bulk (addBulk, BATCH per call) or, with BATCH 0, one by
//                                            one (add); prints {"seconds": s}
//   node bench.mjs worker   URL CONCURRENCY  prints "ready", starts on a "go" line, runs until its
//                                            stdin closes
//   node bench.mjs latency  URL SAMPLES      one job at a time: add, then waitUntilFinished through
//                                            QueueEvents (up to WAIT_MS each: a loaded machine can
//                                            stall one); prints {"ms": [...]}
//
// The queue is "bench"; jobs are no-ops named "noop" with data {}; completed jobs are kept
// (BullMQ's default) and its event stream is capped at its default 10,000 entries.
import { Queue, QueueEvents, Worker } from 'bullmq';
import readline from 'node:readline';

const QUEUE = 'bench';
const WARMUP = 20;
const WAIT_MS = 30000;

function connection(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null };
}

async function enqueue(url, jobs, batch) {
  const queue = new Queue(QUEUE, { connection: connection(url) });
  await queue.waitUntilReady();
  await queue.add('noop', {});
  const start = process.hrtime.bigint();
  if (batch > 0) {
    for (let done = 0; done < jobs; done += batch) {
      const n = Math.min(batch, jobs - done);
      await queue.addBulk(Array.from({ length: n }, () => ({ name: 'noop', data: {} })));
    }
  } else {
    for (let i = 0; i < jobs; i++) await queue.add('noop', {});
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await queue.close();
  console.log(JSON.stringify({ seconds }));
}

async function worker(url, concurrency) {
  const w = new Worker(QUEUE, async () => {}, {
    connection: connection(url), concurrency, autorun: false,
  });
  await w.waitUntilReady();
  const lines = readline.createInterface({ input: process.stdin });
  console.log('ready');
  let running = null;
  for await (const line of lines) {
    if (line.trim() === 'go' && !running) running = w.run();
  }
  await w.close();
  if (running) await running;
}

async function latency(url, samples) {
  const conn = connection(url);
  const queue = new Queue(QUEUE, { connection: conn });
  const events = new QueueEvents(QUEUE, { connection: conn });
  await queue.waitUntilReady();
  await events.waitUntilReady();
  const ms = [];
  for (let i = 0; i < samples + WARMUP; i++) {
    const start = process.hrtime.bigint();
    const job = await queue.add('noop', {});
    await job.waitUntilFinished(events, WAIT_MS);
    if (i >= WARMUP) ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await events.close();
  await queue.close();
  console.log(JSON.stringify({ ms }));
}

const [command, url, n] = process.argv.slice(2);
const extra = Number(process.argv[5] || 0);
if (command === 'enqueue') await enqueue(url, Number(n), extra);
else if (command === 'worker') await worker(url, Number(n));
else if (command === 'latency') await latency(url, Number(n));
else {
  console.error(`unknown command ${command}`);
  process.exit(2);
}
process.exit(0);
