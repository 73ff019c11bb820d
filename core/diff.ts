/*
 * Unified diff (as `diff -u` and git print it) of a trial's code against its parent's, for the
 * lineage: jsdiff's Myers line diff with three lines of context, file headers only.
 */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";

export function unifiedDiff(oldText: string, newText: string, oldName: string, newName: string): string {
  if (oldText === newText) return "";
  return createTwoFilesPatch(oldName, newName, oldText, newText, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
}
