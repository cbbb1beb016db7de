// The status-bar item: the running session with its progress, else the
// SuperQode finding counts; a click lists the sessions.
import * as vscode from "vscode";
import { serverSettingsCommand } from "./server";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("superqode.status", vscode.StatusBarAlignment.Left, 10);
  private running = new Map<string, string | undefined>();
  private counts = { errors: 0, warnings: 0, infos: 0 };
  private last: string | undefined;
  private missing = false;
  private starting = false;

  constructor() {
    this.item.name = "SuperQode";
    this.item.command = "superqode.ui.sessions";
    this.render();
    this.item.show();
  }

  setRunning(session: string, message?: string): void {
    this.running.set(session, message ?? this.running.get(session));
    this.render();
  }

  setDone(session: string, message?: string): void {
    this.running.delete(session);
    this.last = message;
    this.render();
  }

  setCounts(counts: { errors: number; warnings: number; infos: number }): void {
    this.counts = counts;
    this.render();
  }

  /** No server: the item says so and opens the server settings. */
  setMissing(missing = true): void {
    this.missing = missing;
    this.starting = false;
    this.render();
  }

  /** The server is being found, installed (the bundled one) or started. */
  setStarting(starting = true): void {
    this.starting = starting;
    this.render();
  }

  private render(): void {
    if (this.missing) {
      this.item.text = "$(warning) SuperQode: no server";
      this.item.tooltip = "superqode-ls was not found or did not start: see the SuperQode output. Click for its settings.";
      this.item.command = { title: "Settings", ...serverSettingsCommand() };
      this.item.accessibilityInformation = { label: "SuperQode: no server" };
      return;
    }
    if (this.starting) {
      this.item.text = "$(loading~spin) SuperQode: starting";
      this.item.tooltip = "Starting superqode-ls (the first start installs the bundled server). See the SuperQode output.";
      this.item.command = "superqode.ui.showOutput";
      this.item.accessibilityInformation = { label: "SuperQode: starting" };
      return;
    }
    this.item.command = "superqode.ui.sessions";
    const c = this.counts;
    const counts = `$(error) ${c.errors} $(warning) ${c.warnings} $(info) ${c.infos}`;
    const [session, message] = [...this.running.entries()].pop() ?? [];
    if (session) {
      this.item.text = `$(sync~spin) SuperQode ${session} ${counts}`;
      this.item.tooltip = `SuperQode session ${session} is running${message ? `: ${message}` : ""}. Click for sessions.`;
    } else {
      this.item.text = `$(beaker) SuperQode ${counts}`;
      this.item.tooltip = (this.last ? `Last: ${this.last}\n` : "") + "SuperQode findings. Click for sessions.";
    }
    this.item.accessibilityInformation = { label: this.item.text.replace(/\$\([^)]*\)\s?/g, "") };
  }

  dispose(): void {
    this.item.dispose();
  }
}
