// The language status item of .ss files (the `{}` in the status bar): which server
// runs, or why none does, with the log one click away.
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import { ServerManager } from './server';

export function languageStatus(server: ServerManager): vscode.Disposable {
  const item = vscode.languages.createLanguageStatusItem('shapescript.server', { language: 'shapescript' });
  item.name = 'ShapeScript language server';
  item.command = { title: 'Show log', command: 'shapescript.showServerLog' };
  let watching: vscode.Disposable | undefined;

  const update = () => {
    const client = server.client;
    const state = client ? client.state : undefined;
    item.busy = state === State.Starting;
    if (state === State.Running) {
      const info = client!.initializeResult?.serverInfo;
      item.text = info ? `${info.name} ${info.version || ''}`.trimEnd() : 'shapescript-lsp';
      item.detail = server.server ? `${server.server.command} (from ${server.server.source})` : undefined;
      item.severity = vscode.LanguageStatusSeverity.Information;
    } else if (state === State.Starting) {
      item.text = 'shapescript-lsp starting';
      item.detail = undefined;
      item.severity = vscode.LanguageStatusSeverity.Information;
    } else {
      item.text = server.server ? 'shapescript-lsp stopped' : 'shapescript-lsp not found';
      item.detail = server.server ? 'ShapeScript: Restart server starts it' : 'see the notification: How to install';
      item.severity = vscode.LanguageStatusSeverity.Warning;
    }
  };
  const sub = server.onDidChangeClient(() => {
    watching?.dispose();
    watching = server.client?.onDidChangeState(update);
    update();
  });
  update();
  return { dispose: () => { sub.dispose(); watching?.dispose(); item.dispose(); } };
}
