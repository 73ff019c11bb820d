/** Unified diffs with their lines coloured, and a line diff for comparing two texts in the browser. */

export function Diff({ text, testid }: { text: string; testid?: string }) {
  if (!text.trim()) return <p class="muted">No differences.</p>;
  return (
    <pre class="diff" data-testid={testid}>
      {text.split("\n").map((line) => {
        const cls = line.startsWith("+++") || line.startsWith("---") ? "d-file" : line.startsWith("@@") ? "d-hunk" : line.startsWith("+") ? "d-add" : line.startsWith("-") ? "d-del" : "";
        return <div class={cls}>{line || " "}</div>;
      })}
    </pre>
  );
}

/** A unified-style diff of two short texts (configs): every line, marked +, - or unchanged (LCS). */
export function lineDiff(a: string, b: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      out.push(` ${x[i++]}`);
      j++;
    } else if (i < x.length && (j === y.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      // Removals before additions, as unified diffs print them.
      out.push(`-${x[i++]}`);
    } else {
      out.push(`+${y[j++]}`);
    }
  }
  return out.join("\n");
}
