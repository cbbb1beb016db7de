// The server bundled in the .vsix (scripts/bundle.mjs): wheels installed, with
// no network, into a venv the extension owns under its global storage. The
// venv is made with the Python extension's interpreter or a `python3` found on
// PATH, whichever matches the version the wheels were built for.
import { execFile } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import type { ServerCommand } from "./server";

interface Manifest {
  python: string;
  implementation: string;
  platform: string;
  server: string;
  pip: string;
  wheels: string[];
}

const BIN = process.platform === "win32" ? "Scripts" : "bin";
const PY = process.platform === "win32" ? "python.exe" : "python";
// A setup that died (the window closed mid-install) leaves its lock behind.
const STALE_LOCK_MS = 10 * 60 * 1000;

function run(file: string, args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: env ?? process.env, maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60 * 1000 },
      (err, stdout, stderr) => {
        // err.code is the exit status, or a string (ENOENT) when it did not start.
        const status = (err as { code?: unknown } | null)?.code;
        const code = err ? (typeof status === "number" ? status : 1) : 0;
        resolve({ code, out: `${stdout}${stderr}${err && !stderr ? String(err) : ""}` });
      });
  });
}

export function readManifest(extensionPath: string): Manifest | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(extensionPath, "bundled", "manifest.json"), "utf8"));
  } catch {
    return undefined; // a .vsix built without the bundle
  }
}

/** Interpreters to build the venv with, best first: the Python extension's
 * selection, python.defaultInterpreterPath, then python3 and python on PATH. */
async function candidates(): Promise<string[]> {
  const out: string[] = [];
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (ext) {
    try {
      const api: any = ext.isActive ? ext.exports : await ext.activate();
      const env = api?.environments?.getActiveEnvironmentPath?.(vscode.workspace.workspaceFolders?.[0]?.uri);
      if (typeof env?.path === "string") {
        out.push(env.path);
      }
    } catch {
      // an old or broken Python extension: PATH still has a chance
    }
  }
  const configured = vscode.workspace.getConfiguration("python").get<string>("defaultInterpreterPath");
  if (configured && configured !== "python") {
    out.push(configured);
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of process.platform === "win32" ? ["python.exe"] : ["python3", "python"]) {
      const p = path.join(dir, name);
      if (dir && fs.existsSync(p)) {
        out.push(p);
      }
    }
  }
  return [...new Set(out)];
}

/** The first interpreter whose version and implementation the wheels fit;
 * else the reason, naming what was found. */
async function pickInterpreter(m: Manifest): Promise<string | { reason: string }> {
  const seen: string[] = [];
  for (const p of await candidates()) {
    const r = await run(p, ["-c", "import sys; print('%d.%d' % sys.version_info[:2], sys.implementation.name)"]);
    if (r.code !== 0) {
      continue;
    }
    const [version, impl] = r.out.trim().split(/\s+/);
    if (version === m.python && impl === m.implementation) {
      return p;
    }
    seen.push(`${p} (${impl} ${version})`);
  }
  return {
    reason: `the bundled server needs Python ${m.python} (${m.platform}); found ${seen.length ? seen.join(", ") : "no Python interpreter"}.`,
  };
}

function lockOrWait(lock: string): boolean {
  try {
    fs.mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - fs.statSync(lock).mtimeMs > STALE_LOCK_MS) {
        fs.rmSync(lock, { recursive: true, force: true });
        fs.mkdirSync(lock);
        return true;
      }
    } catch {
      // another window took it meanwhile
    }
    return false;
  }
}

/** The bundled server, installed on first use: a ServerCommand, or why not. */
export async function bundledServer(
  context: vscode.ExtensionContext,
  log: (line: string) => void,
): Promise<ServerCommand | string | undefined> {
  const m = readManifest(context.extensionPath);
  if (!m) {
    return undefined;
  }
  // One venv per bundle: a new extension version gets a fresh one.
  const base = path.join(context.globalStorageUri.fsPath, "server");
  const venv = path.join(base, m.server.replace(/\.whl$/, ""));
  const python = path.join(venv, BIN, PY);
  const stamp = path.join(venv, ".superqode-bundle.json");
  const want = JSON.stringify(m.wheels);
  const ready = () => fs.existsSync(python) && fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === want;
  const command: ServerCommand = { command: python, args: ["-m", "superqode_ls.server"], source: `bundled server (${venv})` };
  if (ready()) {
    return command;
  }
  fs.mkdirSync(base, { recursive: true });
  const lock = `${venv}.lock`;
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "SuperQode: installing the bundled server (first start)" },
    async (progress) => {
      while (!lockOrWait(lock)) {
        progress.report({ message: "another window is installing it…" });
        await new Promise((r) => setTimeout(r, 1000));
        if (ready()) {
          return command;
        }
      }
      try {
        if (ready()) {
          return command;
        }
        const interpreter = await pickInterpreter(m);
        if (typeof interpreter !== "string") {
          return interpreter.reason;
        }
        log(`Installing the bundled server into ${venv} with ${interpreter}`);
        fs.rmSync(venv, { recursive: true, force: true });
        progress.report({ message: `creating a venv with ${interpreter}` });
        // --without-pip: Debian's python3 has no ensurepip; pip runs from its wheel.
        let r = await run(interpreter, ["-m", "venv", "--without-pip", venv]);
        if (r.code !== 0) {
          log(r.out);
          return `creating a venv with ${interpreter} failed: ${r.out.trim().split("\n").pop()}`;
        }
        progress.report({ message: `installing ${m.wheels.length} packages (offline)` });
        const wheels = path.join(context.extensionPath, "bundled", "wheels");
        // The user's pip configuration (indexes, constraints) has no say over an offline install.
        const env: NodeJS.ProcessEnv = { ...process.env, PIP_CONFIG_FILE: process.platform === "win32" ? "nul" : "/dev/null",
          PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_NO_INPUT: "1" };
        delete env.PYTHONPATH;
        delete env.PIP_REQUIRE_VIRTUALENV;
        r = await run(python, [path.join(wheels, m.pip, "pip"), "install", "--no-index", "--find-links", wheels,
          "--quiet", `${path.join(wheels, m.server)}[deep]`], env);  // deep mode's tools too
        log(r.out.trim());
        if (r.code !== 0) {
          return `installing the bundled server failed (see the SuperQode output): ${r.out.trim().split("\n").pop()}`;
        }
        fs.writeFileSync(stamp, want);
        log(`Bundled server ready in ${venv}`);
        return command;
      } finally {
        fs.rmSync(lock, { recursive: true, force: true });
      }
    },
  );
}
