/**
 * The Python client (clients/python) installed as a user installs it, `pip install ./clients/python`,
 * and its pytest files run against a dashboard a test has started.
 *
 * pip builds a local folder in place (its build/ and egg-info would land in the checkout), so it
 * installs from a copy, with the project's .venv's pip and setuptools (no download), into a
 * throwaway folder that PYTHONPATH names for pytest from the same .venv: a venv of its own,
 * even with --system-site-packages, would see the base interpreter's packages, not the .venv's pytest.
 */
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROJECT_PYTHON } from "../../core/config.js";
import { run, type Ran } from "./run.js";

const ROOT = join(import.meta.dirname, "..", "..");
const CLIENT = join(ROOT, "clients", "python");

/** Installs the client; the folder it is installed in. */
export async function installPythonClient(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "python-client-"));
  cpSync(CLIENT, join(dir, "source"), { recursive: true, filter: (p) => !p.includes("__pycache__") });
  const site = join(dir, "site");
  const args = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--no-deps", "--no-build-isolation", "--target", site, join(dir, "source")];
  const ran = await run(PROJECT_PYTHON, args, { timeout: 120_000 });
  if (ran.status !== 0) throw new Error(`pip install clients/python failed (${ran.status}):\n${ran.stdout}${ran.stderr}`);
  return site;
}

/** Runs one of the client's test files (clients/python/tests/FILE) with the installed client and `env`. */
export function pythonClientTests(site: string, file: string, env: Record<string, string>): Promise<Ran> {
  const args = ["-m", "pytest", "-q", join(CLIENT, "tests", file)];
  return run(PROJECT_PYTHON, args, { cwd: ROOT, timeout: 120_000, env: { ...process.env, PYTHONPATH: site, PYTHONDONTWRITEBYTECODE: "1", ...env } });
}
