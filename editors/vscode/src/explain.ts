// "ShapeScript: Explain error under cursor": the code's page in a Markdown preview —
// the docs page the diagnostic links to when it is on disk, else what
// `shapescript explain CODE` prints, else the link opened outside.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { resolveCli } from './serverCommand';
import { ServerManager } from './server';

interface Explained {
  code: string;
  target?: vscode.Uri;
  message: string;
}

function codeOf(d: vscode.Diagnostic): Explained | undefined {
  const c = d.code;
  if (c === undefined || c === null) {
    return undefined;
  }
  if (typeof c === 'object') {
    return { code: String(c.value), target: c.target, message: d.message };
  }
  return { code: String(c), message: d.message };
}

function runCli(cli: string, code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cli, ['explain', code], { timeout: 15000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error((stderr || err.message).trim()));
      } else {
        resolve(stdout);
      }
    });
  });
}

export async function explainError(server: ServerManager): Promise<string | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'shapescript') {
    void vscode.window.showErrorMessage('ShapeScript: put the cursor on an error in a .ss file.');
    return undefined;
  }
  const pos = editor.selection.active;
  const all = vscode.languages.getDiagnostics(editor.document.uri).filter((d) => codeOf(d));
  let here = all.filter((d) => d.range.contains(pos));
  if (here.length === 0) {
    here = all.filter((d) => d.range.start.line <= pos.line && pos.line <= d.range.end.line);
  }
  if (here.length === 0) {
    void vscode.window.showInformationMessage('ShapeScript: there is no error under the cursor.');
    return undefined;
  }
  here.sort((a, b) => a.severity - b.severity);
  let chosen = codeOf(here[0])!;
  const distinct = [...new Map(here.map((d) => [codeOf(d)!.code, codeOf(d)!])).values()];
  if (distinct.length > 1) {
    const pick = await vscode.window.showQuickPick(distinct.map((e) => ({ label: e.code, description: e.message, e })),
      { placeHolder: 'The error to explain' });
    if (!pick) {
      return undefined;
    }
    chosen = pick.e;
  }
  const { code, target } = chosen;

  if (target && target.scheme === 'file' && fs.existsSync(target.fsPath)) {
    await vscode.commands.executeCommand('markdown.showPreviewToSide', target.with({ fragment: '' }));
    return code;
  }
  const cli = resolveCli(server.server);
  if (cli) {
    try {
      const text = await runCli(cli, code);
      const dir = vscode.Uri.joinPath(server.context.globalStorageUri, 'explain');
      await vscode.workspace.fs.createDirectory(dir);
      const page = vscode.Uri.joinPath(dir, `${code}.md`);
      await vscode.workspace.fs.writeFile(page, new TextEncoder().encode(text));
      await vscode.commands.executeCommand('markdown.showPreviewToSide', page);
      return code;
    } catch (e) {
      server.log.warn(`shapescript explain ${code}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (target) {
    await vscode.env.openExternal(target);
    return code;
  }
  void vscode.window.showWarningMessage(`ShapeScript: no page for ${code} was found (the \`shapescript\` command is not installed).`);
  return undefined;
}
