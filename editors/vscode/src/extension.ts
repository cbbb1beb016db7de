// SuperQode for VS Code: starts superqode-ls, adds the SuperQode commands, shows
// the running session and the finding counts in the status bar.
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { bundledServer } from "./bundle";
import { findServer, INSTALL_HINT, NOT_FOUND, serverSettingsCommand } from "./server";
import { StatusBar } from "./status";
import { handleTrustQuestions } from "./trust";

let client: LanguageClient | undefined;
let status: StatusBar;
let output: vscode.OutputChannel;
let lastSession: string | undefined;
let trustQuestions: vscode.Disposable | undefined;

interface SessionInfo {
  sessionId: string;
  folder?: string;
  mode?: string;
  state?: string;
  findings?: number;
  verdict?: string | null;
  onDisk?: boolean;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("SuperQode");
  stamp("activate");
  status = new StatusBar();
  context.subscriptions.push(output, status);

  const command = (id: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  command("superqode.ui.run", () => runQE({}));
  command("superqode.ui.runDeep", () => runQE({ mode: "deep" }));
  command("superqode.ui.runWithRoles", runWithRoles);
  command("superqode.ui.runFile", () => {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return uri ? runQE({ uri: uri.toString() }) : vscode.window.showWarningMessage("SuperQode: no file is open.");
  });
  command("superqode.ui.cancel", cancel);
  command("superqode.ui.fixAll", () => fixAll(false));
  command("superqode.ui.fixAllWorkspace", () => fixAll(true));
  command("superqode.ui.showReport", () => execute("superqode.showReport", {}));
  command("superqode.ui.sessions", sessions);
  command("superqode.ui.showOutput", () => output.show());
  command("superqode.ui.newWorktree", newWorktree);
  command("superqode.ui.openWorktree", openWorktree);
  command("superqode.ui.restart", async () => {
    await stop();
    await start(context);
  });

  context.subscriptions.push(
    vscode.languages.onDidChangeDiagnostics(() => status.setCounts(countFindings())),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("superqode.server")) {
        await stop();
        await start(context);
      }
    }),
    // The server remembers a "Not now" for its lifetime: a folder trusted in
    // VS Code afterwards gets a fresh server, which asks (and is answered) again.
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      await stop();
      await start(context);
    }),
    { dispose: () => void stop() },
  );
  await start(context);
}

export function deactivate(): Thenable<void> | undefined {
  return stop();
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  status.setStarting();
  const found = findServer() ?? (await bundledServer(context, (line) => output.appendLine(line))) ?? NOT_FOUND;
  if (typeof found === "string") {
    status.setMissing();
    output.appendLine(`${found} ${INSTALL_HINT}`);
    const choice = await vscode.window.showErrorMessage(
      `SuperQode: ${found} ${INSTALL_HINT}`,
      "Open Settings",
      "Show Log",
    );
    if (choice === "Open Settings") {
      const open = serverSettingsCommand();
      void vscode.commands.executeCommand(open.command, ...open.arguments);
    } else if (choice === "Show Log") {
      output.show();
    }
    return;
  }
  output.appendLine(`Starting ${found.command} ${found.args.join(" ")} (from ${found.source})`);
  const serverOptions: ServerOptions = {
    command: found.command,
    args: found.args,
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    outputChannel: output,
    traceOutputChannel: output,
    synchronize: { configurationSection: "superqode" },
    initializationOptions: { superqode: initialSettings() },
    middleware: {
      ...timingMiddleware(),
      // A pull cancelled by a newer one (two refreshes close together, as at
      // a run's end) comes back from vscode-languageclient as an empty
      // report, which it sets until the newer pull answers: the file's
      // diagnostics were cleared and refilled (10-20 ms apart in traces at
      // load 10, longer when the server is busy). Cancelled, it sets nothing.
      provideDiagnostics: async (document, previousResultId, token, next) => {
        const report: any = await next(document, previousResultId, token);
        if (token.isCancellationRequested) {
          stampTiming?.(`diagnostics pull cancelled ${uriOf(document)}`);
          throw new vscode.CancellationError();
        }
        stampTiming?.(`diagnostics received ${uriOf(document)}: ${report?.items ? `${report.items.length} item(s)` : report?.kind}`);
        return report;
      },
      workspace: {
        configuration: async (params, token, next) => withInterpreter(params, await next(params, token)) as any,
      },
      // A finding's hover is VS Code's own diagnostic hover (message, rule
      // link, quick fix); the server's would say the same again below it.
      provideHover: () => undefined,
      window: {
        // The Quality Report is Markdown: show it rendered, as a preview.
        showDocument: async (params, next) => {
          if (/\.md$/i.test(params.uri) && !params.external) {
            try {
              await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.parse(params.uri));
              return { success: true };
            } catch {
              // no Markdown extension (disabled): the plain text then
            }
          }
          const shown = await next(params, new vscode.CancellationTokenSource().token);
          return "success" in shown ? shown : { success: false };
        },
      },
    },
  };
  client = new LanguageClient("superqode", "SuperQode", serverOptions, clientOptions);
  stamp("server starting");
  try {
    await client.start();
    stamp("server started");
  } catch (e) {
    status.setMissing();
    void vscode.window.showErrorMessage(`SuperQode: the server did not start: ${e}. ${INSTALL_HINT}`);
    return;
  }
  void learnPython(client);
  trackProgress(client);
  trustQuestions = handleTrustQuestions(client, (line) => output.appendLine(line));
  status.setMissing(false);  // also ends "starting"
  status.setCounts(countFindings());
}

let stampTiming: ((what: string) => void) | undefined;

/** The extension's own steps (activation, the server's start), stamped as
 * timingMiddleware stamps the messages, with superqode.trace.server on. */
function stamp(what: string): void {
  if (vscode.workspace.getConfiguration("superqode").get<string>("trace.server", "off") !== "off") {
    output.appendLine(`[timing ${new Date().toISOString()}] ${what}`);
  }
}

function uriOf(document: vscode.TextDocument | vscode.Uri): string {
  return (document instanceof vscode.Uri ? document : document.uri).toString();
}

/** With superqode.trace.server on: a line stamped to the millisecond (the
 * trace's own stamps are to the second) for each open and save sent and each
 * diagnostics answer received, to line up with the server's log and the
 * screen (bench/editors.py --trace). */
function timingMiddleware(): Middleware {
  stampTiming = undefined;
  if (vscode.workspace.getConfiguration("superqode").get<string>("trace.server", "off") === "off") {
    return {};
  }
  const stamp = (what: string) => output.appendLine(`[timing ${new Date().toISOString()}] ${what}`);
  stampTiming = stamp;
  return {
    didOpen: async (document, next) => {
      stamp(`didOpen sending ${document.uri.toString()}`);
      await next(document);
      stamp(`didOpen sent ${document.uri.toString()}`);
    },
    didSave: async (document, next) => {
      stamp(`didSave sending ${document.uri.toString()}`);
      await next(document);
    },
  };
}

// The interpreter the Python extension has selected, once it said (learnPython).
let selectedInterpreter: string | undefined;

/** The superqode settings, with the interpreter the Python extension has
 * selected as `python` when superqode.python is not set (the server runs the
 * project's tests with it unless roles.python says otherwise), as far as
 * known now: the server starts without waiting for the Python extension. */
function initialSettings(): Record<string, unknown> {
  const settings = vscode.workspace.getConfiguration("superqode");
  const plain = JSON.parse(JSON.stringify(settings)) as Record<string, unknown>;
  plain.python = settings.get<string | null>("python") ?? selectedInterpreter ?? null;
  return plain;
}

/** The Python extension's interpreter, asked beside the server's start: its
 * activation (seconds in a large workspace) held the server's spawn, and
 * with it the first file's findings, which need no interpreter. Once known,
 * the server is told the settings changed and reads it from the answer to
 * its workspace/configuration (withInterpreter). */
async function learnPython(c: LanguageClient): Promise<void> {
  const found = await selectedPython();
  if (found === undefined || found === selectedInterpreter) {
    return;
  }
  selectedInterpreter = found;
  if (client === c && c.isRunning()) {
    await c.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
  }
}

/** A workspace/configuration answer with the selected interpreter as the
 * superqode section's `python` where the user set none. */
function withInterpreter(params: { items: { section?: string }[] }, result: unknown): unknown {
  if (!Array.isArray(result) || selectedInterpreter === undefined) {
    return result;
  }
  return result.map((value, i) =>
    params.items[i]?.section === "superqode" && value && typeof value === "object" && value.python == null
      ? { ...value, python: selectedInterpreter }
      : value);
}

async function selectedPython(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const folder = vscode.workspace.workspaceFolders?.[0];
    const env = api?.environments?.getActiveEnvironmentPath?.(folder?.uri);
    return typeof env?.path === "string" ? env.path : undefined;
  } catch {
    return undefined; // an old or broken Python extension: the server discovers one itself
  }
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  trustQuestions?.dispose();
  trustQuestions = undefined;
  if (c && c.state !== State.Stopped) {
    await c.stop();
  }
}

/** Every server progress is a QE session ("superqode/<session id>"): show it as
 * a cancellable notification and in the status bar. */
function trackProgress(c: LanguageClient): void {
  c.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
    let done: (() => void) | undefined;
    let report: ((message?: string) => void) | undefined;
    const session = String(token).replace(/^superqode\//, "");
    const disposable = c.onProgress(WorkDoneProgress.type, token, (value: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
      if (value.kind === "begin") {
        status.setRunning(session, value.message);
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: value.title, cancellable: value.cancellable },
          (progress, cancelled) =>
            new Promise<void>((resolve) => {
              done = resolve;
              report = (message) => progress.report({ message });
              report(value.message);
              cancelled.onCancellationRequested(() => {
                void c.sendNotification(WorkDoneProgressCancelNotification.type, { token });
              });
            }),
        );
      } else if (value.kind === "report") {
        status.setRunning(session, value.message);
        report?.(value.message);
      } else {
        disposable.dispose();
        status.setDone(session, value.message);
        done?.();
        void announceEnd(session, value.message);
      }
    });
    return null;
  });
}

/** The end of a session, where it cannot be missed: the progress toast is gone
 * by now, so a notification with the verdict line and where to look next. A
 * failure is not repeated here: the server says it with window/showMessage. */
async function announceEnd(session: string, message?: string): Promise<void> {
  if (!message || message.startsWith("failed")) {
    return;
  }
  const text = message === "cancelled" ? `session ${session} cancelled` : message;
  const choice = await vscode.window.showInformationMessage(`SuperQode: ${text}`, "Show Report", "Show Problems");
  if (choice === "Show Report") {
    await execute("superqode.showReport", { sessionId: session });
  } else if (choice === "Show Problems") {
    await vscode.commands.executeCommand("workbench.actions.view.problems");
  }
}

function countFindings(): { errors: number; warnings: number; infos: number } {
  const counts = { errors: 0, warnings: 0, infos: 0 };
  for (const [, diagnostics] of vscode.languages.getDiagnostics()) {
    for (const d of diagnostics) {
      if (d.source !== "superqode") {
        continue;
      }
      if (d.severity === vscode.DiagnosticSeverity.Error) {
        counts.errors++;
      } else if (d.severity === vscode.DiagnosticSeverity.Warning) {
        counts.warnings++;
      } else {
        counts.infos++;
      }
    }
  }
  return counts;
}

async function execute<T = any>(command: string, argument: object): Promise<T | undefined> {
  if (!client || client.state !== State.Running) {
    void vscode.window.showWarningMessage("SuperQode: the server is not running (see the SuperQode output).");
    return undefined;
  }
  try {
    return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] });
  } catch (e: any) {
    void vscode.window.showErrorMessage(`SuperQode: ${e?.message ?? e}`);
    return undefined;
  }
}

async function runQE(argument: { mode?: string; uri?: string; roles?: string[]; worker?: string }): Promise<void> {
  const result = await execute<{ sessionId: string }>("superqode.runQE", argument);
  if (result?.sessionId) {
    lastSession = result.sessionId;
    status.setRunning(result.sessionId, "starting");
  }
}

/** One role as superqode.listRoles reports it. */
export interface RoleInfo {
  name: string;
  description: string;
  tool?: string | null;
  executesCode: boolean;
  agent: boolean;
  default: boolean;
  canRun: boolean;
  reason?: string | null;
}

export interface RoleList {
  folder: string;
  mode: string;
  trusted: boolean;
  roles: RoleInfo[];
  agents: { name: string; command: string[]; worker: boolean; reason?: string | null }[];
  worker?: string | null;
  provider?: string | null;
}

type RoleItem = vscode.QuickPickItem & { role?: string };

/** Who does the agent roles' work: the ACP agent named by agent.worker, or
 * the built-in loop over the configured provider. */
export function workerLine(list: RoleList): string {
  const acp = list.agents.find((a) => a.worker);
  const worker = acp
    ? `worker: ${acp.name} (ACP: ${acp.command.join(" ")})`
    : `worker: built-in loop${list.provider ? ` over provider ${list.provider}` : ""}`;
  const others = list.agents.filter((a) => !a.worker).map((a) => a.name);
  return others.length ? `${worker}; also configured: ${others.join(", ")}` : worker;
}

/** The quick pick's rows: the roles in three groups, those a plain Run QE
 * runs already ticked, each that cannot run now saying why. */
export function roleItems(list: RoleList): RoleItem[] {
  const groups: [string, (r: RoleInfo) => boolean][] = [
    ["Analyzers (read the code)", (r) => !r.executesCode && !r.agent],
    [`Run the project's code${list.trusted ? "" : " (folder not trusted: Run QE asks first)"}`,
      (r) => r.executesCode && !r.agent],
    [`Agent roles · ${workerLine(list)}`, (r) => r.agent],
  ];
  const items: RoleItem[] = [];
  for (const [title, member] of groups) {
    const roles = list.roles.filter(member);
    if (!roles.length) {
      continue;
    }
    items.push({ label: title, kind: vscode.QuickPickItemKind.Separator });
    for (const r of roles) {
      items.push({
        label: r.name,
        description: r.tool ?? undefined,
        detail: r.canRun ? r.description : `$(warning) cannot run now: ${r.reason}`,
        picked: r.default,
        role: r.name,
      });
    }
  }
  return items;
}

/** "Run QE with roles…": the roles the server reports for the active file's
 * folder (else the first folder), picked in a multi-select quick pick, then
 * a run of that folder with exactly those roles. */
async function runWithRoles(): Promise<void> {
  const active = vscode.window.activeTextEditor?.document.uri;
  const listed = await execute<RoleList>("superqode.listRoles", active?.scheme === "file" ? { uri: active.toString() } : {});
  if (!listed) {
    return;
  }
  const picked = await vscode.window.showQuickPick(roleItems(listed), {
    canPickMany: true,
    title: `SuperQode: Run QE with roles (${listed.folder.replace(/^.*[\\/]/, "")})`,
    placeHolder: "Tick the roles to run; the ticked ones are what Run QE runs now",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  const roles = (picked ?? []).map((p) => p.role).filter((r): r is string => typeof r === "string");
  if (!roles.length) {
    return; // dismissed, or nothing ticked: nothing to run
  }
  let worker: string | undefined;
  if (listed.agents.length && listed.roles.some((r) => r.agent && roles.includes(r.name))) {
    worker = await pickWorker(listed);
    if (worker === undefined) {
      return;
    }
  }
  await runQE({ uri: vscode.Uri.file(listed.folder).toString(), roles, worker });
}

/** With ACP agents configured and agent roles ticked: who does their work
 * in this run, the built-in loop or one of the agents (the configured one
 * first). undefined: dismissed. */
async function pickWorker(list: RoleList): Promise<string | undefined> {
  const current = list.agents.find((a) => a.worker)?.name ?? "builtin";
  const choices: vscode.QuickPickItem[] = [
    { label: "builtin", description: `the built-in loop${list.provider ? ` over provider ${list.provider}` : ""}` },
    ...list.agents.map((a) => ({
      label: a.name,
      description: `ACP: ${a.command.join(" ")}`,
      detail: a.reason ? `$(warning) cannot run now: ${a.reason}` : undefined,
    })),
  ].sort((a, b) => Number(b.label === current) - Number(a.label === current));
  const chosen = await vscode.window.showQuickPick(choices, {
    title: "SuperQode: who does the agent roles' work in this run?",
    placeHolder: `superqode.yaml says: ${current}`,
  });
  return chosen?.label;
}

async function cancel(): Promise<void> {
  const listed = (await execute<{ sessions: SessionInfo[] }>("superqode.listSessions", {}))?.sessions ?? [];
  const running = listed.filter((s) => s.state === "running" || s.state === "starting");
  let target: string | undefined;
  if (running.length === 1) {
    target = running[0].sessionId;
  } else if (running.length > 1) {
    target = (await vscode.window.showQuickPick(running.map((s) => s.sessionId), { placeHolder: "Cancel which session?" }));
  } else {
    void vscode.window.showInformationMessage("SuperQode: no session is running.");
    return;
  }
  if (target) {
    await execute("superqode.cancel", { sessionId: target });
  }
}

/** Every verified safe fix of the active file, or with `everywhere` of every
 * file with findings, open or not (VS Code leaves the unopened ones edited
 * and unsaved, as after a rename: File: Save All writes them). */
async function fixAll(everywhere: boolean): Promise<void> {
  const uri = everywhere ? undefined : vscode.window.activeTextEditor?.document.uri;
  const result = await execute<FixAllResult>("superqode.applyAllFixes", uri ? { uri: uri.toString() } : {});
  if (!result) {
    return;
  }
  // Name what the edit left unsaved (files no editor had open stay dirty in
  // the background), with the one click that writes them.
  const edited = new Set((result.files ?? []).map((f) => vscode.Uri.file(f).toString()));
  const unsaved = vscode.workspace.textDocuments
    .filter((d) => d.isDirty && edited.has(d.uri.toString()))
    // By their path in the workspace, as the server names them: two files of
    // one name in two folders stay apart.
    .map((d) => vscode.workspace.asRelativePath(d.uri, false));
  let text = `SuperQode: ${fixAllMessage(result)}`;
  if (unsaved.length) {
    text += ` Unsaved: ${unsaved.join(", ")}.`;
    const pick = await vscode.window.showInformationMessage(text, "Save All");
    if (pick === "Save All") {
      await vscode.workspace.saveAll(false);
    }
    return;
  }
  void vscode.window.showInformationMessage(text);
}

interface FixAllResult {
  applied: number;
  files?: string[];
  relFiles?: string[];
  counts?: string;
  cancelled?: boolean;
  skipped?: { findingId?: string; rule?: string; reason: string }[];
}

/** What Fix All did: the count, the files it edited and what it left out,
 * when the server says (older servers send the count only). */
export function fixAllMessage(r: FixAllResult): string {
  if (r.cancelled) {
    return "Fix All cancelled; nothing changed.";
  }
  const base = (f: string) => f.replace(/^.*[\\/]/, "");
  let text: string;
  if (typeof r.counts === "string") {
    // The server's words for the count: the session's end and the report say the same.
    text = `applied ${r.applied} fix${r.applied === 1 ? "" : "es"} (${r.counts})`;
  } else {
    text = r.applied === 1 ? "applied 1 verified fix" : `applied ${r.applied} verified fixes`;
  }
  const files = r.relFiles ?? r.files?.map(base);
  if (files?.length) {
    text += ` in ${files.join(", ")}`;
  }
  text += ".";
  if (r.skipped?.length) {
    text += ` Skipped ${r.skipped.length}: ` + r.skipped.map((s) => `${s.rule ?? s.findingId ?? "?"} (${s.reason})`).join("; ") + ".";
  }
  return text;
}

async function sessions(): Promise<void> {
  const listed = (await execute<{ sessions: SessionInfo[] }>("superqode.listSessions", {}))?.sessions;
  if (!listed) {
    return;
  }
  if (listed.length === 0) {
    void vscode.window.showInformationMessage("SuperQode: no sessions yet. Run \"SuperQode: Run QE\".");
    return;
  }
  const picked = await vscode.window.showQuickPick(
    listed.map((s) => ({
      label: s.sessionId,
      description: [s.state, s.mode, typeof s.findings === "number" ? `${s.findings} finding(s)` : "", s.verdict ?? ""]
        .filter(Boolean).join(" · "),
      detail: s.onDisk ? `left on disk in ${s.folder}` : s.folder,
      session: s,
    })),
    { placeHolder: "SuperQode sessions" },
  );
  if (!picked) {
    return;
  }
  const live = picked.session.state === "running" || picked.session.state === "starting";
  // A finished session removed its sandbox at its end: only a live one or one
  // left on disk (a crash) has anything to revert.
  const actions = ["Show Report", live ? "Cancel" : undefined, live || picked.session.onDisk ? "Revert" : undefined]
    .filter(Boolean) as string[];
  const action = await vscode.window.showQuickPick(actions, { placeHolder: picked.label });
  if (action === "Show Report") {
    await execute("superqode.showReport", { sessionId: picked.label });
  } else if (action === "Cancel") {
    await execute("superqode.cancel", { sessionId: picked.label });
  } else if (action === "Revert") {
    const r = await execute<{ verification?: string }>("superqode.revertSession", { sessionId: picked.label });
    if (r) {
      const what = live ? "cancelled; its sandbox is removed" : "its sandbox is removed";
      void vscode.window.showInformationMessage(`SuperQode: ${picked.label}: ${what}. ${r.verification ?? ""}`.trim());
    }
  }
}

export function lastSessionId(): string | undefined {
  return lastSession;
}

interface WorktreeInfo {
  name: string;
  branch: string | null;
  detached: boolean;
  path: string;
  state: string;
}

/** The repository a worktree command works on: the active file's, else the first folder's. */
function repoArgument(): { uri?: string } {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === "file" ? { uri: uri.toString() } : {};
}

/** Open a worktree folder in a new window. The server is told showDocument: false,
 * since the language client would hand a folder to the system's opener. */
async function openInNewWindow(folder: string): Promise<void> {
  await vscode.commands.executeCommand("vscode.openFolder", vscode.Uri.file(folder), { forceNewWindow: true });
}

/** Parse the input box: "BRANCH", "-b BRANCH" (must be new), "--task TEXT", or a
 * sentence (several words) as a task; empty = a detached exploration worktree. */
export function worktreeRequest(text: string): { branch?: string; task?: string; newBranch?: boolean } {
  const t = text.trim();
  if (t.startsWith("--task")) {
    return { task: t.slice("--task".length).trim() };
  }
  if (t.startsWith("-b ")) {
    return { branch: t.slice(3).trim(), newBranch: true };
  }
  if (t === "") {
    return {};
  }
  return /\s/.test(t) ? { task: t } : { branch: t };
}

async function newWorktree(): Promise<void> {
  const text = await vscode.window.showInputBox({
    title: "SuperQode: New Worktree",
    prompt: "A branch (existing or new), or a task in words to name a new branch. Empty: a detached worktree at HEAD.",
    placeHolder: "feature/login   or   Refactor auth logic in app/models.py",
  });
  if (text === undefined) {
    return;
  }
  const result = await execute<{ path: string; branch: string | null; name: string }>(
    "superqode.newWorktree",
    { ...repoArgument(), ...worktreeRequest(text), showDocument: false },
  );
  if (result) {
    output.appendLine(`Worktree ${result.name} (${result.branch ?? "detached"}) at ${result.path}`);
    await openInNewWindow(result.path);
  }
}

async function openWorktree(name?: string): Promise<void> {
  if (typeof name !== "string" || name === "") {
    const listed = await execute<WorktreeInfo[]>("superqode.listWorktrees", repoArgument());
    if (!listed) {
      return;
    }
    if (listed.length === 0) {
      void vscode.window.showInformationMessage("SuperQode: no worktrees yet. Run \"SuperQode: New Worktree…\".");
      return;
    }
    const picked = await vscode.window.showQuickPick(
      listed.map((w) => ({
        label: w.name,
        description: [w.branch ?? "detached", w.state].join(" · "),
        detail: w.path,
      })),
      { placeHolder: "Open which worktree (in a new window)?" },
    );
    if (!picked) {
      return;
    }
    name = picked.label;
  }
  const result = await execute<{ path: string }>(
    "superqode.openWorktree",
    { ...repoArgument(), name, showDocument: false },
  );
  if (result) {
    await openInNewWindow(result.path);
  }
}
