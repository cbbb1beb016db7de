// Finding superqode-ls: the settings, an interpreter that has it, the
// workspace's .venv, PATH; with none of them, the server bundled in the .vsix
// (bundle.ts) is used.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";

export interface ServerCommand {
  command: string;
  args: string[];
  source: string;
}

const BIN = process.platform === "win32" ? "Scripts" : "bin";
const EXE = process.platform === "win32" ? "superqode-ls.exe" : "superqode-ls";

function executable(file: string | undefined | null): file is string {
  if (!file) {
    return false;
  }
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function expand(p: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE ?? "";
  p = p.replace(/^~(?=$|[\\/])/, home);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";
  return p.replace(/\$\{workspaceFolder\}/g, folder);
}

/** superqode-ls next to a Python interpreter (the venv's bin directory). */
function nextTo(python: string): string | undefined {
  const candidate = path.join(path.dirname(python), EXE);
  return executable(candidate) ? candidate : undefined;
}

function onPath(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, EXE);
    if (dir && executable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

/** The server from the settings or the environment; a string when a setting
 * points nowhere; undefined when there is none (then the bundled one is used). */
export function findServer(): ServerCommand | string | undefined {
  const cfg = vscode.workspace.getConfiguration("superqode");
  const configured = cfg.get<string | null>("server.path")?.trim();
  if (configured) {
    const p = expand(configured);
    return executable(p)
      ? { command: p, args: [], source: "superqode.server.path" }
      : `superqode.server.path is set to ${p}, which is not an executable file.`;
  }
  const python = cfg.get<string | null>("server.python")?.trim();
  if (python) {
    const p = expand(python);
    if (!executable(p)) {
      return `superqode.server.python is set to ${p}, which is not an executable file.`;
    }
    return { command: nextTo(p) ?? p, args: nextTo(p) ? [] : ["-m", "superqode_ls.server"], source: "superqode.server.python" };
  }
  const interpreter = vscode.workspace.getConfiguration("python").get<string>("defaultInterpreterPath");
  if (interpreter && interpreter !== "python") {
    const found = nextTo(expand(interpreter));
    if (found) {
      return { command: found, args: [], source: "python.defaultInterpreterPath" };
    }
  }
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const candidate = path.join(folder.uri.fsPath, ".venv", BIN, EXE);
    if (executable(candidate)) {
      return { command: candidate, args: [], source: `${folder.name}/.venv` };
    }
  }
  const found = onPath();
  return found ? { command: found, args: [], source: "PATH" } : undefined;
}

export const NOT_FOUND =
  "superqode-ls was not found (superqode.server.path, the Python interpreter, the workspace's .venv, PATH) " +
  "and this .vsix has no bundled server.";

/** The settings editor on the server settings. They are machine-overridable, so
 * a remote window (Remote-SSH, WSL, code-server) shows them only on its Remote
 * tab: open that one there. */
export function serverSettingsCommand(): { command: string; arguments: object[] } {
  return {
    command: vscode.env.remoteName ? "workbench.action.openRemoteSettings" : "workbench.action.openSettings",
    // The options object, not a bare string: openRemoteSettings drops a string query.
    arguments: [{ query: "superqode.server" }],
  };
}

export const INSTALL_HINT =
  "Install it with `pip install superqode-ls` and set superqode.server.path (or superqode.server.python) " +
  "to it, or use a .vsix with the bundled server.";
