// ShapeScript for VS Code: the language (grammar, configuration, snippets, in the
// manifest), `shapescript-lsp` started through vscode-languageclient, and the commands.
import * as vscode from 'vscode';
import { explainError } from './explain';
import { ExportArgs, exportFunction } from './exportCommand';
import { EXPORT_UI_COMMAND, ServerManager } from './server';
import { languageStatus } from './status';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext) {
  const log = vscode.window.createOutputChannel('ShapeScript', { log: true });
  manager = new ServerManager(context, log);
  const server = manager;
  context.subscriptions.push(
    log,
    vscode.commands.registerCommand(EXPORT_UI_COMMAND, (args?: ExportArgs) => exportFunction(server, args || {})),
    vscode.commands.registerCommand('shapescript.explainError', () => explainError(server)),
    vscode.commands.registerCommand('shapescript.restartServer', () => server.restart()),
    vscode.commands.registerCommand('shapescript.showServerLog', () => log.show(true)),
    languageStatus(server),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  const m = manager;
  manager = undefined;
  if (m) {
    m.dispose();
    await m.stop();
  }
}
