// Puts the server into the extension, the way ruff's extension carries its
// libraries: bundled/wheels holds superqode-ls and every dependency as wheels
// (plus pip, to install them with an interpreter that has no pip of its own),
// bundled/manifest.json says which interpreter they fit. At its first start
// the extension installs them, offline, into a venv of its own.
//
// The wheels are built with SUPERQODE_BUNDLE_PYTHON, else the checkout's
// .venv/bin/python, else python3: compiled wheels (pydantic-core, PyYAML...)
// fit that interpreter's version and platform only, so the manifest records them.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { fileURLToPath } from "url";

const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = path.resolve(ext, "..", "..");
const out = path.join(ext, "bundled");
const wheels = path.join(out, "wheels");

function python() {
  if (process.env.SUPERQODE_BUNDLE_PYTHON) {
    return process.env.SUPERQODE_BUNDLE_PYTHON;
  }
  const venv = path.join(root, ".venv", "bin", "python");
  return fs.existsSync(venv) ? venv : "python3";
}

const py = python();
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(wheels, { recursive: true });
// With the [deep] extra: "Run QE (deep)" works with the bundled server as it is.
execFileSync(py, ["-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "-w", wheels, `${root}[deep]`, "pip"], {
  stdio: ["ignore", "inherit", "inherit"],
});
const info = JSON.parse(
  execFileSync(py, ["-c", [
    "import json, sys, sysconfig",
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2],",
    "  'implementation': sys.implementation.name, 'platform': sysconfig.get_platform()}))",
  ].join("\n")]).toString(),
);
const files = fs.readdirSync(wheels).filter((f) => f.endsWith(".whl")).sort();
const find = (prefix) => files.find((f) => f.startsWith(prefix));
const manifest = {
  python: info.version,
  implementation: info.implementation,
  platform: info.platform,
  server: find("superqode_ls-"),
  pip: find("pip-"),
  wheels: files,
};
if (!manifest.server || !manifest.pip) {
  throw new Error(`bundle: no superqode_ls or pip wheel in ${wheels}: ${files.join(", ")}`);
}
fs.writeFileSync(path.join(out, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
console.log(`bundle: ${files.length} wheels for CPython ${info.version} on ${info.platform}`);
