/**
 * The checks of a person's data files that the CLIs make before any process starts (the runner
 * stays the authority; these only catch in seconds what would fail after the whole swarm came
 * up), shared by the built-in csv dataset (cli/preflight.ts) and the tasks of the registry.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";

// The runner sniffs the delimiter among these (gpu-runner/python/data_files.py, _read_csv).
const CSV_DELIMITERS = [",", ";", "\t", "|"];

/** The first non-blank line of a file, without a byte-order mark; undefined when there is none. */
function firstLine(path: string): string | undefined {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(1 << 16);
    const text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString("utf8").replace(/^\uFEFF/, "");
    return text.split(/\r?\n/).find((l) => l.trim() !== "");
  } finally {
    closeSync(fd);
  }
}

/** A CSV line's fields with `delimiter`, quotes as CSV has them ("a, b" is one field); a line that is not CSV with it: none. */
function fieldsOf(line: string, delimiter: string): string[] {
  try {
    return (parse(line, { delimiter, trim: true, relax_quotes: true, relax_column_count: true }) as string[][])[0] ?? [];
  } catch {
    return [];
  }
}

/**
 * Whether `target` is a column of the CSV at `path` (`what` names the dataset in the message):
 * lenient on purpose (any of the runner's delimiters, quotes stripped), so it never refuses a
 * file the runner reads. A folder holds train.csv and optionally test.csv, as the runner reads it.
 */
export function csvColumnProblem(what: string, path: string, target: string): string | undefined {
  const file = statSync(path, { throwIfNoEntry: false })?.isDirectory() ? join(path, "train.csv") : path;
  if (file !== path && !statSync(file, { throwIfNoEntry: false })?.isFile()) return `${what}: ${path} is a folder without train.csv`;
  let header: string | undefined;
  try {
    header = firstLine(file);
  } catch (err) {
    return `${what}: cannot read ${file}: ${(err as Error).message}`;
  }
  if (header === undefined) return `${what}: ${file} is empty, expected a header row`;
  const splits = CSV_DELIMITERS.map((delimiter) => fieldsOf(header, delimiter));
  if (splits.some((fields) => fields.includes(target))) return undefined;
  const columns = splits.reduce((a, b) => (b.length > a.length ? b : a));
  return `${what}: no column "${target}" in ${file}; its header has ${columns.map((c) => `"${c}"`).join(", ")}`;
}
