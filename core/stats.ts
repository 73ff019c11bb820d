/**
 * Student's t distribution: the 95% critical value for confidence intervals
 * and the two-sided p-value for comparing runs (research ablations).
 */

// Two-sided 95% critical values t(0.975, df) for df = 1..30.
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101,
  2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** The normal distribution's two-sided 95% critical value. */
export const Z975 = 1.959964;

export function tCritical975(df: number): number {
  if (!Number.isInteger(df) || df < 1) throw new RangeError(`degrees of freedom must be a positive integer, got ${df}`);
  if (df <= T975.length) return T975[df - 1]!;
  // Cornish-Fisher expansion around the normal quantile; error < 1e-4 for df > 30.
  const z = Z975;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2);
}

/** Continued fraction of the regularised incomplete beta function (Numerical Recipes, betacf). */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  d = 1 / (Math.abs(d) < tiny ? tiny : d);
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a - 1 + m2) * (a + m2));
    d = 1 / (Math.abs(1 + aa * d) < tiny ? tiny : 1 + aa * d);
    c = Math.abs(1 + aa / c) < tiny ? tiny : 1 + aa / c;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + 1 + m2));
    d = 1 / (Math.abs(1 + aa * d) < tiny ? tiny : 1 + aa * d);
    c = Math.abs(1 + aa / c) < tiny ? tiny : 1 + aa / c;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-12) break;
  }
  return h;
}

function logGamma(x: number): number {
  // Lanczos approximation, g = 7.
  const g = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  x -= 1;
  let a = g[0]!;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += g[i]! / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

function incompleteBeta(a: number, b: number, x: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betaContinuedFraction(a, b, x)) / a : 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** P(|T| >= |t|) for Student's t with `df` degrees of freedom. */
export function tTwoSidedP(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  return incompleteBeta(df / 2, 0.5, df / (df + t * t));
}

/**
 * Mean, sample standard deviation and the half-width of the Student's t 95% interval of the mean;
 * with fewer than two values no spread is known: sd and half are 0.
 */
export function tInterval(values: ArrayLike<number>): { n: number; mean: number; sd: number; half: number } {
  const n = values.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i]!;
  const mean = n ? sum / n : 0;
  if (n < 2) return { n, mean, sd: 0, half: 0 };
  let squares = 0;
  for (let i = 0; i < n; i++) squares += (values[i]! - mean) ** 2;
  const sd = Math.sqrt(squares / (n - 1));
  return { n, mean, sd, half: (tCritical975(n - 1) * sd) / Math.sqrt(n) };
}

export interface PairedTest {
  n: number;
  meanDiff: number;
  sdDiff: number;
  t: number;
  df: number;
  p: number;
  ci95: [number, number];
}

/** Paired t-test of b - a over matched pairs (same seeds in both arms). */
export function pairedTTest(a: number[], b: number[]): PairedTest {
  if (a.length !== b.length || a.length < 2) throw new RangeError("a paired t-test needs two equally long samples of at least 2");
  const { n, mean: meanDiff, sd: sdDiff, half } = tInterval(b.map((x, i) => x - a[i]!));
  const se = sdDiff / Math.sqrt(n);
  const t = se === 0 ? (meanDiff === 0 ? 0 : Infinity * Math.sign(meanDiff)) : meanDiff / se;
  return { n, meanDiff, sdDiff, t, df: n - 1, p: se === 0 && meanDiff === 0 ? 1 : tTwoSidedP(t, n - 1), ci95: [meanDiff - half, meanDiff + half] };
}
