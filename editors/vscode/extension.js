// ShapeScript for VS Code: starts `shapescript-lsp` for `.ss` files. Everything else
// (diagnostics, hover, inlay shapes, quick fixes, the "Export ▸" code lens) comes from
// the server; the one command here asks for a target and runs the server's export.
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

async function activate(context) {
  const command = vscode.workspace.getConfiguration('shapescript').get('server.command') || ['shapescript-lsp'];
  const serverOptions = { command: command[0], args: command.slice(1) };
  const clientOptions = {
    documentSelector: [{ language: 'shapescript' }],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/{*.ss,shapescript.toml}') },
    // vscode-languageclient 11 needs a log channel
    outputChannel: vscode.window.createOutputChannel('ShapeScript', { log: true }),
  };
  client = new LanguageClient('shapescript', 'ShapeScript', serverOptions, clientOptions);
  await client.start();

  context.subscriptions.push(vscode.commands.registerCommand('shapescript.exportHere', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'shapescript') {
      return;
    }
    const target = await vscode.window.showQuickPick(['hf', 'vllm', 'gguf'], { placeHolder: 'Export for' });
    if (!target) {
      return;
    }
    const position = client.code2ProtocolConverter.asPosition(editor.selection.active);
    await client.sendRequest('workspace/executeCommand', {
      command: 'shapescript.export',
      arguments: [{ uri: editor.document.uri.toString(), target, position }],
    });
  }));
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
