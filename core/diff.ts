/*
 * Unified diff (as `diff -u` / git print it) of a trial's code against its
 * parent's, for the lineage. Myers' O(ND) line diff: generated model files
 * differ in a handful of lines, so D stays small.
 */

type Op = { kind: " " | "-" | "+"; line: string };

const CONTEXT = 3;

export function unifiedDiff(oldText: string, newText: string, oldName: string, newName: string): string {
  if (oldText === newText) return "";
  const ops = myers(splitLines(oldText), splitLines(newText));
  const out = [`--- ${oldName}`, `+++ ${newName}`];
  for (const [start, end] of hunkRanges(ops)) {
    let oldStart = 0;
    let newStart = 0;
    for (const op of ops.slice(0, start)) {
      if (op.kind !== "+") oldStart++;
      if (op.kind !== "-") newStart++;
    }
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((op) => op.kind !== "+").length;
    const newCount = hunk.filter((op) => op.kind !== "-").length;
    out.push(`@@ -${range(oldStart, oldCount)} +${range(newStart, newCount)} @@`);
    for (const op of hunk) {
      if (op.line.endsWith("\n")) out.push(op.kind + op.line.slice(0, -1));
      else out.push(op.kind + op.line, "\\ No newline at end of file");
    }
  }
  return `${out.join("\n")}\n`;
}

/** Lines keep their "\n" so that a missing final newline counts as a change. */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** GNU's convention: an empty range names the line before it, a one-line range omits its length. */
function range(start: number, length: number): string {
  if (length === 0) return `${start},0`;
  if (length === 1) return `${start + 1}`;
  return `${start + 1},${length}`;
}

/** [start, end) slices of ops: each change with CONTEXT lines around it, merged where contexts touch. */
function hunkRanges(ops: Op[]): [number, number][] {
  const ranges: [number, number][] = [];
  ops.forEach((op, i) => {
    if (op.kind === " ") return;
    const start = Math.max(0, i - CONTEXT);
    const end = Math.min(ops.length, i + CONTEXT + 1);
    const last = ranges[ranges.length - 1];
    if (last && start <= last[1]) last[1] = end;
    else ranges.push([start, end]);
  });
  return ranges;
}

function myers(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] is the window k in [-d-1, d+1] of V before step d (all that step d reads),
  // kept to walk the shortest edit path back in O(D^2) memory.
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d]!;
    const at = (k: number) => vd[d + 1 + k]!;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      y--;
      ops.push({ kind: " ", line: a[--x]! });
    }
    if (d > 0) {
      if (down) ops.push({ kind: "+", line: b[--y]! });
      else ops.push({ kind: "-", line: a[--x]! });
    }
  }
  return ops.reverse();
}
