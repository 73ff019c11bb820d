/**
 * Throughput of applyEvent vs applyEvents and query latency at ~1k trials, on real LanceDB in a
 * temp dir. Run: npx tsx bench/lineage-bench.ts [trialsForSingle=100] [trialsForQueries=1000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineageStore } from "../lineage-store/store.js";
import { trialId } from "../core/ids.js";
import { manyTrials, runEvents } from "../test/lineage-store/fixtures.js";

const singleTrials = Number(process.argv[2] ?? 100);
const queryTrials = Number(process.argv[3] ?? 1000);
const root = mkdtempSync(join(tmpdir(), "lineage-bench-"));

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await fn();
  return [r, performance.now() - t];
}

async function latency(label: string, n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) ms.push((await timed(() => fn(i)))[1]);
  ms.sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!.toFixed(1);
  console.log(`${label.padEnd(44)} p50 ${q(0.5)} ms  p95 ${q(0.95)} ms`);
}

try {
  const events = runEvents("single", manyTrials(singleTrials));
  const one = await LineageStore.open(join(root, "single"));
  const [, singleMs] = await timed(async () => {
    for (const e of events) await one.applyEvent(e);
  });
  console.log(`applyEvent x${events.length}: ${(events.length / (singleMs / 1000)).toFixed(0)} events/s (${singleMs.toFixed(0)} ms)`);
  await latency("similarTrials(text) after per-event commits", 20, () => one.similarTrials({ text: "wider conv stack with batchnorm", k: 10 }));
  const [, optMs] = await timed(() => one.optimize(0));
  console.log(`optimize(): ${optMs.toFixed(0)} ms`);
  await latency("similarTrials(text) after optimize", 20, () => one.similarTrials({ text: "wider conv stack with batchnorm", k: 10 }));
  await one.close();

  for (const batch of [50, 500]) {
    const store = await LineageStore.open(join(root, `batch${batch}`));
    const [, ms] = await timed(async () => {
      for (let i = 0; i < events.length; i += batch) await store.applyEvents(events.slice(i, i + batch));
    });
    console.log(`applyEvents batches of ${batch}, ${events.length} events: ${(events.length / (ms / 1000)).toFixed(0)} events/s (${ms.toFixed(0)} ms)`);
    await store.close();
  }

  const big = runEvents("big", manyTrials(queryTrials));
  const store = await LineageStore.open(join(root, "queries"));
  const [, loadMs] = await timed(async () => {
    for (let i = 0; i < big.length; i += 500) await store.applyEvents(big.slice(i, i + 500));
  });
  console.log(`loaded ${await store.count("trials")} trials / ${await store.count("events")} events in ${loadMs.toFixed(0)} ms (batches of 500)`);
  await store.optimize(0);
  const texts = ["squeeze excitation block", "wider conv stack with batchnorm", "cosine schedule with warmup", "dilated attention classifier"];
  await latency(`similarTrials(text, k=10) @${queryTrials}`, 50, (i) => store.similarTrials({ text: texts[i % texts.length]!, k: 10 }));
  await latency(`similarTrials(trialId, k=10) @${queryTrials}`, 50, (i) => store.similarTrials({ trialId: trialId("big", i * 7), k: 10 }));
  await latency(`similarTrials(text, failureLabel=oom)`, 50, (i) =>
    store.similarTrials({ text: texts[i % texts.length]!, k: 10, failureLabel: "oom" }));
  await latency(`similarTrials(text, score 0.85..0.9, run)`, 50, (i) =>
    store.similarTrials({ text: texts[i % texts.length]!, k: 10, runId: "big", minScore: 0.85, maxScore: 0.9 }));
  await latency("getTrial", 50, (i) => store.getTrial(trialId("big", i * 13)));
  await latency(`listTrials (${queryTrials} rows)`, 10, () => store.listTrials("big"));
  await latency(`eventsOf (${big.length} rows)`, 10, () => store.eventsOf("big"));
  await latency(`eventsOf(trialId)`, 20, (i) => store.eventsOf("big", { trialId: trialId("big", i) }));
  await latency(`searchHypotheses (FTS)`, 20, () => store.searchHypotheses("bottleneck attention", { k: 10 }));
  await store.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
