import { describe, expect, it } from "vitest";
import { parseGoal } from "../../core/goal.js";
import { datasetModality, normaliseDataset, parseCount, parseDuration, readGoalText } from "../../core/goal-words.js";
import { Metric } from "../../proto/gen/research/v1/runner_pb.js";
import { Cost } from "../../proto/gen/research/v1/common_pb.js";

interface Expected {
  dataset: string;
  target: number;
  maxParams?: number;
  timeBudgetS?: number;
  dataDir?: string;
  targetColumn?: string;
}

const ACCEPTED: [string, Expected][] = [
  ["fashion-mnist: reach 90% validation accuracy", { dataset: "fashion-mnist", target: 0.9 }],
  ["Fashion-MNIST, >= 92% val accuracy, < 200k params, 20 min", { dataset: "fashion-mnist", target: 0.92, maxParams: 200_000, timeBudgetS: 1200 }],
  ["digits 0.95 accuracy under 50k parameters in 5 minutes", { dataset: "digits", target: 0.95, maxParams: 50_000, timeBudgetS: 300 }],
  ["cifar10 at least 80% acc, 1M params, 2h", { dataset: "cifar10", target: 0.8, maxParams: 1_000_000, timeBudgetS: 7200 }],
  ["csv:/data/titanic.csv target=Survived 0.8", { dataset: "csv", target: 0.8, dataDir: "/data/titanic.csv", targetColumn: "Survived" }],
  ["FashionMNIST 91 accuracy 1h30m", { dataset: "fashion-mnist", target: 0.91, timeBudgetS: 5400 }],
  ["fmnist 0.9 acc max_params=200000 600s", { dataset: "fashion-mnist", target: 0.9, maxParams: 200_000, timeBudgetS: 600 }],
  ["fashion_mnist 93 percent", { dataset: "fashion-mnist", target: 0.93 }],
  ["CIFAR-100 60% top-1, 3M params, 10 epochs", { dataset: "cifar100", target: 0.6, maxParams: 3_000_000 }],
  ["svhn 93% 100k 20m", { dataset: "svhn", target: 0.93, maxParams: 100_000, timeBudgetS: 1200 }],
  ["breast-cancer 97% with 10 epochs", { dataset: "breast_cancer", target: 0.97 }],
  ["MNIST digits 99% in 90 seconds", { dataset: "mnist", target: 0.99, timeBudgetS: 90 }],
  ["wine: 200,000 params, 95% val_accuracy, 1.5 hours", { dataset: "wine", target: 0.95, maxParams: 200_000, timeBudgetS: 5400 }],
  ["iris 100%", { dataset: "iris", target: 1 }],
  ["text:/data/reviews 85% accuracy", { dataset: "text", target: 0.85, dataDir: "/data/reviews" }],
  ["csv /data/x.csv label column species 0.9", { dataset: "csv", target: 0.9, dataDir: "/data/x.csv", targetColumn: "species" }],
  ["csv:/data/x.csv: reach 80% validation accuracy, target=label", { dataset: "csv", target: 0.8, dataDir: "/data/x.csv", targetColumn: "label" }],
  ["csv:/data/x.csv target=label: reach 80% validation accuracy", { dataset: "csv", target: 0.8, dataDir: "/data/x.csv", targetColumn: "label" }],
  ["synthetic 0.75", { dataset: "synthetic", target: 0.75 }],
];

const REJECTED: [string, RegExp][] = [
  ["fashion-mnist please", /could not find a target accuracy \(or "maximise accuracy" for the best model within the limits\)/],
  ["reach 90% validation accuracy", /could not find a dataset/],
  ["imagenet: 80% accuracy", /"imagenet" is not one/],
  ["mnist 150%", /at most 100%, got 150%/],
  ["iris 0%", /above 0%/],
  ["mnist or cifar10 90%", /several datasets \(cifar10, mnist\)/],
  ["mnist 90% and 95% accuracy", /several targets \(90%, 95%\)/],
  ["mnist 90%, 100k params, 200k params", /several parameter limits/],
  ["mnist 0.9 macro f1", /a goal decides on accuracy, rmse, mae, r2 or bits_per_byte, not macro f1/],
  ["csv target=label 0.8", /could not find a dataset/],
  // No default dataset, with or without a target.
  ["find the best model you can in 30 minutes", /could not find a dataset in .*understood: no target \(best model\), time_budget=30min\..*Write e\.g\. "fashion-mnist: best model you can in 30 minutes"/],
  ["maximise accuracy", /could not find a dataset/],
  ["imagenet: best model", /"imagenet" is not one/],
  ["mnist maximise accuracy, at least 90%", /asks for the best model possible \("maximise"\) and for a target \(90%\); keep one/],
  ["fmnist: as good as possible, 95% val accuracy", /"as good as possible"\) and for a target \(95%\)/],
  ["mnist maximise macro f1", /a goal decides on accuracy, rmse, mae, r2 or bits_per_byte, not macro f1/],
  ["mnist best model, 100k params, 200k params", /several parameter limits/],
  // "maximum" before a limit is no request for the best accuracy.
  ["mnist: maximum 200k params", /could not find a target accuracy/],
];

interface OpenEnded {
  dataset: string;
  maxParams?: number;
  timeBudgetS?: number;
  /** The text asks about test accuracy, so the description says the search never uses the test split. */
  test?: boolean;
}

const OPEN_ENDED: [string, OpenEnded][] = [
  ["fashion-mnist: maximise test accuracy", { dataset: "fashion-mnist", test: true }],
  ["fashion-mnist: find the best model you can in 30 minutes", { dataset: "fashion-mnist", timeBudgetS: 1800 }],
  ["mnist: maximize validation accuracy, < 200k params, 20 min", { dataset: "mnist", maxParams: 200_000, timeBudgetS: 1200 }],
  ["cifar10 as good as possible under 100k params", { dataset: "cifar10", maxParams: 100_000 }],
  ["SVHN, highest accuracy in 1h30m", { dataset: "svhn", timeBudgetS: 5400 }],
  ["digits max accuracy, 50k parameters", { dataset: "digits", maxParams: 50_000 }],
  ["iris: most accurate model", { dataset: "iris" }],
  ["wine: best model in 2 hours", { dataset: "wine", timeBudgetS: 7200 }],
  ["breast-cancer: maximising test-set accuracy", { dataset: "breast_cancer", test: true }],
  ["cifar100 as high as you can, 3M params", { dataset: "cifar100", maxParams: 3_000_000 }],
  ["synthetic: optimise accuracy", { dataset: "synthetic" }],
];

describe("parseGoal", () => {
  it.each(ACCEPTED)("reads %j", (text, want) => {
    const r = parseGoal(text);
    if (!r.ok) throw new Error(r.error);
    expect(r.goal.$typeName).toBe("research.v1.Goal");
    expect(r.goal.rawText).toBe(text);
    expect(r.goal.objective).toBe(Metric.ACCURACY);
    expect(r.goal.dataset).toBe(want.dataset);
    expect(r.goal.target).toBeCloseTo(want.target, 10);
    expect(r.goal.maxParams).toBe(BigInt(want.maxParams ?? 0));
    expect(r.goal.timeBudgetS).toBe(want.timeBudgetS ?? 0);
    expect(r.goal.dataDir).toBe(want.dataDir ?? "");
    expect(r.goal.targetColumn).toBe(want.targetColumn ?? "");
    expect(r.goal.openEnded).toBe(false);
    expect(r.goal.description).toMatch(/^reach \d.*% validation accuracy on .* \(95% CI lower bound\)/);
  });

  it.each(OPEN_ENDED)("reads the open-ended %j", (text, want) => {
    const r = parseGoal(text);
    if (!r.ok) throw new Error(r.error);
    expect(r.goal.openEnded).toBe(true);
    // Target 0 reaches the runner as "no target" (GoalStatus NO_TARGET).
    expect(r.goal.target).toBe(0);
    expect(r.goal.objective).toBe(Metric.ACCURACY);
    expect(r.goal.dataset).toBe(want.dataset);
    expect(r.goal.maxParams).toBe(BigInt(want.maxParams ?? 0));
    expect(r.goal.timeBudgetS).toBe(want.timeBudgetS ?? 0);
    expect(r.goal.description).toMatch(new RegExp(`^find the most accurate model on ${want.dataset}: no target; maximise validation accuracy`));
    expect(r.goal.description.includes("never uses the test split")).toBe(want.test ?? false);
  });

  it("describes what the run will do, limits and the test split included", () => {
    const open = parseGoal("fashion-mnist: maximise test accuracy, 200k params, 30 min");
    if (!open.ok) throw new Error(open.error);
    expect(open.goal.description).toBe(
      "find the most accurate model on fashion-mnist: no target; maximise validation accuracy until the trial or time budget is spent or it plateaus, " +
        "at most 200,000 parameters, within 30min; the search never uses the test split: the best model's test accuracy is measured once at the end",
    );
    // A target stated on test accuracy is still decided on validation.
    const targeted = parseGoal("csv:/data/t.csv target=y 0.8 test accuracy");
    if (!targeted.ok) throw new Error(targeted.error);
    expect(targeted.goal.target).toBeCloseTo(0.8);
    expect(targeted.goal.description).toBe(
      "reach 80% validation accuracy on csv (/data/t.csv) (95% CI lower bound); the search never uses the test split: the best model's test accuracy is measured once at the end",
    );
  });

  it("lets a target override turn an open-ended goal into a targeted one", () => {
    const r = parseGoal("mnist maximise accuracy, at least 90%", { target: "95%" });
    if (!r.ok) throw new Error(r.error);
    expect(r.goal.openEnded).toBe(false);
    expect(r.goal.target).toBeCloseTo(0.95);
    const filled = parseGoal("mnist: best model", { timeBudgetS: "20m", maxParams: "100k" });
    if (!filled.ok) throw new Error(filled.error);
    expect(filled.goal).toMatchObject({ openEnded: true, target: 0, timeBudgetS: 1200, maxParams: 100_000n });
  });

  it.each(REJECTED)("rejects %j", (text, pattern) => {
    const r = parseGoal(text);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toMatch(pattern);
      expect(r.error).toContain(`"${text}"`);
      expect(r.error).toMatch(/understood: .*Write e\.g\. "/);
    }
  });

  it("says what it understood and how to write the goal", () => {
    const r = parseGoal("fashion-mnist please");
    expect(r).toEqual({
      ok: false,
      error:
        'could not find a target accuracy (or "maximise accuracy" for the best model within the limits) in "fashion-mnist please"; understood: dataset=fashion-mnist. Write e.g. "fashion-mnist: reach 90% validation accuracy"',
    });
  });

  it("lists the known datasets when none was found", () => {
    const r = parseGoal("reach 90%");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/understood: target=90%\. Known datasets: fashion-mnist, .*csv:<path> target=<column>/);
  });

  it("lets overrides win over the text and fill what is missing", () => {
    const r = parseGoal("mnist 90% 100k params", { dataset: "FashionMNIST", target: "95%", maxParams: "200k", timeBudgetS: "20m" });
    if (!r.ok) throw new Error(r.error);
    expect(r.goal.dataset).toBe("fashion-mnist");
    expect(r.goal.target).toBeCloseTo(0.95);
    expect(r.goal.maxParams).toBe(200_000n);
    expect(r.goal.timeBudgetS).toBe(1200);

    const filled = parseGoal("please be quick", { dataset: "cifar-10", target: 0.8, maxParams: 500_000n, timeBudgetS: 60 });
    if (!filled.ok) throw new Error(filled.error);
    expect(filled.goal.dataset).toBe("cifar10");
    expect(filled.goal.maxParams).toBe(500_000n);
  });

  it("resolves a contradiction in the text when an override names the field", () => {
    const r = parseGoal("mnist 90% or 95%", { target: 92 });
    if (!r.ok) throw new Error(r.error);
    expect(r.goal.target).toBeCloseTo(0.92);
  });

  it("reads override targets as percent above 1 and as fractions up to 1", () => {
    for (const [target, want] of [[92, 0.92], [0.92, 0.92], ["92", 0.92], ["0.5%", 0.005], [1, 1]] as const) {
      const r = parseGoal("mnist", { target });
      if (!r.ok) throw new Error(r.error);
      expect(r.goal.target).toBeCloseTo(want, 10);
    }
  });

  it("rejects out-of-range or unreadable overrides with the field's path", () => {
    const cases: [Parameters<typeof parseGoal>[1], RegExp][] = [
      [{ target: 150 }, /target must be at most 100%, got 150%/],
      [{ target: 0 }, /target must be above 0%/],
      [{ maxParams: -5 }, /maxParams: max_params must be positive/],
      [{ maxParams: "lots" }, /maxParams: cannot read "lots" as a parameter count/],
      [{ timeBudgetS: 0 }, /timeBudgetS: time budget must be positive/],
      [{ timeBudgetS: "soon" }, /cannot read "soon" as a duration/],
      [{ dataset: "imagenet" }, /dataset: unknown dataset "imagenet"/],
      [{ metric: "f1" }, /invalid override: metric: the metric must be accuracy, rmse, mae, r2 or bits_per_byte, got "f1"/],
    ];
    for (const [overrides, pattern] of cases) {
      const r = parseGoal("mnist 90%", overrides);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(pattern);
    }
  });

  it("requires a path for csv and text datasets", () => {
    const r = parseGoal("reach 80%", { dataset: "csv" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/csv needs a path/);

    const withPath = parseGoal("reach 80%", { dataset: "csv", dataDir: "/data/t.csv", targetColumn: "y" });
    if (!withPath.ok) throw new Error(withPath.error);
    expect(withPath.goal.dataDir).toBe("/data/t.csv");
    expect(withPath.goal.targetColumn).toBe("y");
  });

  it("requires a target column for csv, before any runner is asked", () => {
    const r = parseGoal("csv:/data/x.csv: reach 80% validation accuracy");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^csv needs its target column, e.g. "csv:\/data\/x\.csv target=Survived" in /);
  });
});

describe("goal helpers", () => {
  it.each([
    ["fashion_mnist", "fashion-mnist"],
    ["fmnist", "fashion-mnist"],
    ["FashionMNIST", "fashion-mnist"],
    ["Fashion MNIST", "fashion-mnist"],
    ["cifar-10", "cifar10"],
    ["CIFAR10", "cifar10"],
    ["cifar_100", "cifar100"],
    ["breast-cancer", "breast_cancer"],
    ["breast_cancer", "breast_cancer"],
    ["SVHN", "svhn"],
    ["csv", "csv"],
    ["imagenet", undefined],
  ])("normalises dataset %j", (alias, want) => {
    expect(normaliseDataset(alias)).toBe(want);
  });

  it("maps datasets to modalities", () => {
    expect(datasetModality("fmnist")).toBe("vision");
    expect(datasetModality("cifar100")).toBe("vision");
    expect(datasetModality("breast-cancer")).toBe("tabular");
    expect(datasetModality("csv")).toBe("tabular");
    expect(datasetModality("text")).toBe("text");
    expect(datasetModality("synthetic")).toBeUndefined();
    expect(datasetModality("imagenet")).toBeUndefined();
  });

  it("parses counts and durations as CLI flags give them", () => {
    expect(parseCount("200k")).toBe(200_000);
    expect(parseCount("1.5M")).toBe(1_500_000);
    expect(parseCount("200,000 params")).toBe(200_000);
    expect(parseCount("many")).toBeUndefined();
    expect(parseDuration("20m")).toBe(1200);
    expect(parseDuration("1h30m")).toBe(5400);
    expect(parseDuration("2 hours")).toBe(7200);
    expect(parseDuration("90 s")).toBe(90);
    expect(parseDuration("45")).toBe(45);
    expect(parseDuration("later")).toBeUndefined();
  });

  it("keeps every distinct mention when reading raw text", () => {
    const r = readGoalText("mnist or cifar10, 90% or 95%, 10 epochs");
    expect(r.datasets).toEqual(["cifar10", "mnist"]);
    expect(r.targets).toEqual([0.9, 0.95]);
    expect(r.maxParams).toEqual([]);
    expect(r.openEnded).toEqual([]);
    expect(readGoalText("mnist: best model, as good as possible, maximise TEST accuracy")).toMatchObject({
      openEnded: ["best", "as good as possible", "maximise"],
      testAccuracy: true,
      targets: [],
    });
  });
});

describe("regression goals", () => {
  const read = (text: string, overrides = {}) => {
    const r = parseGoal(text, overrides);
    if (!r.ok) throw new Error(r.error);
    return r.goal;
  };
  const refused = (text: string, overrides = {}) => {
    const r = parseGoal(text, overrides);
    if (r.ok) throw new Error(`accepted ${text}`);
    return r.error;
  };

  it("reads a target in the target's own units and which way is better", () => {
    const g = read("diabetes: rmse below 55 in 10 minutes");
    expect([g.dataset, g.objective, g.target, g.openEnded, g.timeBudgetS]).toEqual(["diabetes", Metric.RMSE, 55, false, 600]);
    expect(g.description).toBe("reach validation RMSE 55 or lower on diabetes (95% CI upper bound), within 10min");
    const r2 = read("csv:/data/house.csv target=price: r2 above 0.8");
    expect([r2.dataset, r2.targetColumn, r2.objective, r2.target]).toEqual(["csv", "price", Metric.R2, 0.8]);
    expect(r2.description).toMatch(/^reach validation R² 0\.8 or higher on csv \(\/data\/house\.csv\) \(95% CI lower bound\)/);
    expect(read("diabetes: mean absolute error under 40").objective).toBe(Metric.MAE);
  });

  it("asks for no target when told to minimise, and defaults a numeric dataset's metric to RMSE", () => {
    const g = read("csv:/data/house.csv target=price: minimise rmse in 30 minutes");
    expect([g.objective, g.openEnded, g.target]).toEqual([Metric.RMSE, true, 0]);
    expect(g.description).toMatch(/^find the model with the lowest validation RMSE on csv \(\/data\/house\.csv\): no target; minimise it/);
    expect(read("diabetes: best model in 5 minutes").objective).toBe(Metric.RMSE);
    expect(read("diabetes", { metric: "mae", target: 42 })).toMatchObject({ objective: Metric.MAE, target: 42 });
    // --target as typed: in the metric's units for a regression, a fraction or percentage for accuracy.
    expect(read("diabetes: minimise rmse", { target: "55" })).toMatchObject({ objective: Metric.RMSE, target: 55, openEnded: false });
    expect(read("mnist", { target: "90" }).target).toBeCloseTo(0.9, 10);
  });

  it("refuses a metric that does not fit the dataset, and a percentage for a regression target, in one line", () => {
    expect(refused("diabetes: reach 90% accuracy")).toMatch(/a rmse target is in the metric's own units \(e\.g\. "rmse below 55"\), not 90%/);
    expect(refused("diabetes: 90% accuracy", { metric: "accuracy" })).toMatch(/diabetes is a regression dataset: its goal decides on rmse, mae or r2, not accuracy/);
    expect(refused("mnist: rmse below 0.3")).toMatch(/mnist is a classification dataset: rmse needs a numeric target/);
    expect(refused("diabetes: rmse below -3")).toMatch(/a rmse target must be above 0, got -3/);
    expect(refused("diabetes: r2 above 1.5")).toMatch(/an R² target must be at most 1, got 1\.5/);
    expect(refused("diabetes in 10 minutes")).toMatch(/could not find a target \(e\.g\. "rmse below 55", or "minimise rmse" for the best model/);
    for (const text of ["diabetes: reach 90% accuracy", "diabetes in 10 minutes"]) expect(refused(text).split("\n")).toHaveLength(1);
  });
});

describe("language modelling goals", () => {
  const parsed = (text: string, overrides = {}) => parseGoal(text, overrides);

  it("reads bits per byte on a text corpus, lower being better", () => {
    const r = parsed("text:/data/corpus.txt: bits per byte below 2.5 in 10 minutes");
    if (!r.ok) throw new Error(r.error);
    expect([r.goal.dataset, r.goal.dataDir, r.goal.objective, r.goal.target, r.goal.timeBudgetS]).toEqual(["text", "/data/corpus.txt", Metric.BITS_PER_BYTE, 2.5, 600]);
    expect(r.goal.description).toBe("reach validation bits per byte 2.5 or lower on text (/data/corpus.txt) (95% CI upper bound), within 10min");
    const open = parsed("text:/data/books: minimise bpb in 30 minutes");
    expect(open.ok && [open.goal.objective, open.goal.openEnded, open.goal.dataDir]).toEqual([Metric.BITS_PER_BYTE, true, "/data/books"]);
    const flag = parsed("text:/data/c.txt", { metric: "bits_per_byte", target: "1.8" });
    expect(flag.ok && [flag.goal.objective, flag.goal.target]).toEqual([Metric.BITS_PER_BYTE, 1.8]);
  });

  it("refuses bits per byte without a corpus, and a percentage for its target, in one line", () => {
    const refused = (text: string) => {
      const r = parsed(text);
      if (r.ok) throw new Error(`accepted ${text}`);
      expect(r.error.split("\n")).toHaveLength(1);
      return r.error;
    };
    expect(refused("fashion-mnist: bits per byte below 2")).toMatch(/bits_per_byte needs a text corpus, e\.g\. "text:\/data\/corpus\.txt", not fashion-mnist/);
    expect(refused("text:/data/c.txt: bpb below 20%")).toMatch(/a bits_per_byte target is in the metric's own units \(e\.g\. "bits_per_byte below 2"\), not 20%/);
    expect(refused("text:/data/c.txt: bpb below 0")).toMatch(/a bits_per_byte target must be above 0, got 0/);
    expect(refused("text: bits per byte below 2")).not.toMatch(/understood: dataset=text, path=bits/);
  });
});

describe("Pareto goals and latency limits (issue 39)", () => {
  const read = (text: string) => {
    const r = parseGoal(text);
    if (!r.ok) throw new Error(r.error);
    return r.goal;
  };
  const refused = (text: string) => {
    const r = parseGoal(text);
    if (r.ok) throw new Error(`accepted ${text}`);
    expect(r.error.split("\n")).toHaveLength(1);
    return r.error;
  };

  it("reads the objectives of a Pareto goal in the order written, after a dataset prefix", () => {
    const g = read("digits: pareto: accuracy vs parameters vs latency");
    expect([g.dataset, g.objective, g.tradeOffs, g.openEnded, g.target, g.maxLatencyMs]).toEqual(["digits", Metric.ACCURACY, [Cost.PARAMS, Cost.LATENCY], true, 0, 0]);
    expect(g.description).toMatch(/^find the Pareto front of validation accuracy vs parameters vs latency per example on digits: no target/);
    expect(read("fashion-mnist: pareto: val accuracy versus latency, 15 min")).toMatchObject({ tradeOffs: [Cost.LATENCY], timeBudgetS: 900 });
    // A regression's metric is one of its objectives too.
    expect(read("csv:/data/house.csv target=price: pareto: rmse vs params")).toMatchObject({ objective: Metric.RMSE, tradeOffs: [Cost.PARAMS], openEnded: true });
    // A single-objective goal trades nothing off.
    expect(read("fashion-mnist: best model in 30 minutes").tradeOffs).toEqual([]);
  });

  it("reads a latency limit per example in ms or µs, beside the other limits", () => {
    const g = read("fashion-mnist: best accuracy under 2 ms per image on this CPU");
    expect([g.maxLatencyMs, g.openEnded, g.tradeOffs]).toEqual([2, true, []]);
    expect(g.description).toMatch(/at most 2 ms per example \(batch 1, on the runner's device\)/);
    expect(read("csv:/data/house.csv target=y: minimise rmse, at most 50k params, latency below 500 µs")).toMatchObject({ objective: Metric.RMSE, maxParams: 50_000n, maxLatencyMs: 0.5 });
    expect(read("mnist: reach 98% accuracy, < 1ms latency, 20 min")).toMatchObject({ target: 0.98, maxLatencyMs: 1, timeBudgetS: 1200 });
  });

  it("refuses in one line an objective the task does not have, contradicting limits and an impossible latency", () => {
    expect(refused("fashion-mnist: pareto: rmse vs latency")).toMatch(/fashion-mnist is a classification dataset: rmse needs a numeric target/);
    expect(refused("fashion-mnist: pareto: accuracy vs flops")).toMatch(/a Pareto goal trades the metric off against parameters or latency per example; "flops" is none of them/);
    expect(refused("fashion-mnist: pareto: params vs latency")).toMatch(/trades one metric off against parameters or latency per example, got none/);
    expect(refused("fashion-mnist: pareto: accuracy vs latency vs inference time")).toMatch(/names each of its objectives once/);
    expect(refused("fashion-mnist: pareto")).toMatch(/names what it trades off once, e\.g\. "pareto: accuracy vs parameters vs latency"/);
    expect(refused("fashion-mnist: pareto: accuracy vs latency, reach 90%")).toMatch(/asks for the best model possible \("pareto"\) and for a target \(90%\); keep one/);
    expect(refused("fashion-mnist: best accuracy under 2 ms and under 5 ms per image")).toMatch(/found several latency limits \(2 ms, 5 ms\)/);
    expect(refused("fashion-mnist: best accuracy over 2 ms per image")).toMatch(/a latency limit is an upper bound/);
    expect(refused("fashion-mnist: best accuracy under 0.001 ms per image")).toMatch(/0\.001 ms per example is impossible/);
    expect(refused("pareto: accuracy vs parameters vs latency")).toMatch(/could not find a dataset.*Write e\.g\. "fashion-mnist: pareto: accuracy vs parameters vs latency"/);
  });
});
