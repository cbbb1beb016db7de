// The server's trust question (window/showMessageRequest with a "Trust folder"
// action, asked before roles that run the repository's code). VS Code's own
// workspace trust answers it when the user has it on; otherwise the question
// is asked and stays visible until answered: a notification hides itself after
// a while, so a status-bar item keeps it open and asks again, modally, on click.
import * as vscode from "vscode";
import { LanguageClient, MessageActionItem, ShowMessageRequest, ShowMessageRequestParams } from "vscode-languageclient/node";

const TRUST = "Trust folder";
const NOT_NOW = "Not now";


function workspaceTrustOn(): boolean {
  return vscode.workspace.getConfiguration("security.workspace.trust").get<boolean>("enabled", true);
}

/** Every other showMessageRequest as the language client shows it. */
async function plain(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
  const actions = params.actions ?? [];
  const titles = actions.map((a) => a.title);
  const picked = await (params.type === 1
    ? vscode.window.showErrorMessage(params.message, ...titles)
    : params.type === 2
      ? vscode.window.showWarningMessage(params.message, ...titles)
      : vscode.window.showInformationMessage(params.message, ...titles));
  return actions.find((a) => a.title === picked) ?? null;
}

export function handleTrustQuestions(c: LanguageClient, log: (line: string) => void): vscode.Disposable {
  const item = vscode.window.createStatusBarItem("superqode.trust", vscode.StatusBarAlignment.Left, 11);
  item.name = "SuperQode trust question";
  item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
  const pending: { message: string; resolve: (answer: string) => void }[] = [];
  const settle = (answer: string) => {
    for (const p of pending.splice(0)) {
      p.resolve(answer);
    }
    item.hide();
  };
  const command = vscode.commands.registerCommand("superqode.ui.answerTrust", async () => {
    const open = pending[0];
    if (!open) {
      item.hide();
      return;
    }
    const answer = await vscode.window.showWarningMessage(open.message, { modal: true }, TRUST, NOT_NOW);
    // Esc on the dialog leaves the question open, still in the status bar.
    if (answer) {
      settle(answer);
    }
  });

  c.onRequest(ShowMessageRequest.type, async (params) => {
    const actions = params.actions ?? [];
    if (!actions.some((a) => a.title === TRUST)) {
      return plain(params);
    }
    const title = (t: string) => actions.find((a) => a.title === t) ?? { title: t };
    if (workspaceTrustOn()) {
      // The user already answered this for VS Code: restricted mode means
      // no code of this folder runs (fails closed); trusted means it may.
      const trusted = vscode.workspace.isTrusted;
      log(`Trust question answered by VS Code's workspace trust: ${trusted ? TRUST : NOT_NOW}`);
      if (!trusted) {
        void vscode.window
          .showWarningMessage(
            "SuperQode: roles that run this folder's code are skipped in Restricted Mode.",
            "Manage Workspace Trust",
          )
          .then((choice) => choice && vscode.commands.executeCommand("workbench.trust.manage"));
      }
      return title(trusted ? TRUST : NOT_NOW);
    }
    const answer = await new Promise<string>((resolve) => {
      pending.push({ message: params.message, resolve });
      item.text = "$(shield) SuperQode: trust this folder?";
      item.tooltip = `${params.message}\nClick to answer.`;
      item.command = "superqode.ui.answerTrust";
      item.accessibilityInformation = { label: "SuperQode: trust this folder?" };
      item.show();
      // Dismissing the notification (its X) is "Not now"; one that merely
      // hid itself leaves the question open in the status bar.
      void vscode.window.showWarningMessage(params.message, TRUST, NOT_NOW).then((picked) => {
        if (pending.length) {
          settle(picked ?? NOT_NOW);
        }
      });
    });
    return title(answer);
  });

  return vscode.Disposable.from(item, command, { dispose: () => settle(NOT_NOW) });
}
