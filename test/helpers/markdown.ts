/**
 * A report's Markdown with its wrapped prose joined again (lineage-store/report.ts `readable`
 * wraps it at 100 characters): what a test matches a sentence against. A continuation line is
 * one indented under a list item, a quote's next line, or a paragraph's next line; code blocks,
 * tables, headings and nested items stay as they are.
 */
export function unwrapped(markdown: string): string {
  const out: string[] = [];
  let code = false;
  for (const line of markdown.split("\n")) {
    const fence = line.trimStart().startsWith("```");
    const prev = out.at(-1) ?? "";
    const prose = !/^\s*(\||#|```|!\[)/.test(prev);
    const continues =
      !code && !fence && prev.trim() !== "" && prose &&
      // Under a list item, indented; a quote's next line; a paragraph's next line, unindented.
      (/^ +(?![-*] |\d+\. |```)\S/.test(line) || (line.startsWith("> ") && prev.startsWith("> ")) ||
        (/^[^\s>|#!`*-]/.test(line) && !/^\d+\. /.test(line) && !/^\s*([-*] |\d+\. |> )/.test(prev)));
    if (continues) out[out.length - 1] = `${prev} ${line.replace(/^(?:> | +)/, "")}`;
    else out.push(line);
    if (fence) code = !code;
  }
  return out.join("\n");
}
