// "ShapeScript: Export…": pick the function, the targets, the output folder and the
// weights (defaults from the settings), then run the server's `shapescript.export` for
// each target with its progress in a cancellable notification.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  CodeLens as LspCodeLens,
  CodeLensRequest,
  ExecuteCommandRequest,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { readExportTable } from './projectSettings';
import { EXPORT_COMMAND, ServerManager } from './server';

export const TARGETS = ['hf', 'vllm', 'gguf', 'litert'] as const;
const TARGET_LABELS: Record<string, string> = {
  hf: 'Hugging Face (transformers)',
  vllm: 'vLLM',
  gguf: 'GGUF (llama.cpp)',
  litert: 'LiteRT (.tflite, .litertlm)',
};

/** The GGUF file's types the dialog offers (`--dtype`; docs/serving-engines.md says which to choose). */
const GGUF_TYPES: vscode.QuickPickItem[] = [
  { label: 'f32', description: 'full precision' },
  { label: 'f16', description: 'half the size' },
  { label: 'bf16', description: 'half the size, f32\'s range' },
  { label: 'q8_0', description: '8 bits: about a quarter of f32, nearly lossless' },
  { label: 'q6_k', description: 'llama.cpp\'s 6-bit K-quant' },
  { label: 'q5_k_m', description: 'llama.cpp\'s 5-bit K-quant mix' },
  { label: 'q4_k_m', description: 'llama.cpp\'s 4-bit K-quant mix: the common choice' },
  { label: 'q4_0', description: '4 bits, the plain kind' },
  { label: 'keep', description: 'the .gguf\'s own types, tensor for tensor' },
];

/** What the code lens or a caller may already say; the dialog asks for the rest. */
export interface ExportArgs {
  uri?: string;
  fn?: string;
  target?: string;
  targets?: string[];
  output?: string;
  weights?: string;
  random?: boolean;
  seed?: number;
  dtype?: string;
  force?: boolean;
}

/** What the server answers. */
interface ExportResult {
  ok: boolean;
  message: string;
  output?: string | null;
  fn?: string | null;
  target: string;
  diagnostics?: unknown[];
}

interface Exportable {
  fn: string;
  line: number;
  targets: string[];
}

async function exportables(server: ServerManager, uri: string): Promise<Exportable[]> {
  const client = server.client!;
  const lenses = (await client.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) as LspCodeLens[] | null;
  const byFn = new Map<string, Exportable>();
  for (const lens of lenses || []) {
    const arg = lens.command && lens.command.command === EXPORT_COMMAND && lens.command.arguments
      ? lens.command.arguments[0] as { fn?: string; target?: string } : undefined;
    if (!arg || !arg.fn || !arg.target) {
      continue;
    }
    const e: Exportable = byFn.get(arg.fn) || { fn: arg.fn, line: lens.range.start.line, targets: [] };
    if (!e.targets.includes(arg.target)) {
      e.targets.push(arg.target);
    }
    byFn.set(arg.fn, e);
  }
  return [...byFn.values()].sort((a, b) => a.line - b.line);
}

function folderOf(uri: vscode.Uri): string | undefined {
  const f = vscode.workspace.getWorkspaceFolder(uri) || (vscode.workspace.workspaceFolders || [])[0];
  return f && f.uri.scheme === 'file' ? f.uri.fsPath : undefined;
}

function nonEmptyDir(p: string): boolean {
  try {
    return fs.readdirSync(p).length > 0;
  } catch {
    return false;
  }
}

export async function exportFunction(server: ServerManager, args: ExportArgs = {}): Promise<ExportResult[] | undefined> {
  const editor = vscode.window.activeTextEditor;
  const uri = args.uri ? vscode.Uri.parse(args.uri)
    : editor && editor.document.languageId === 'shapescript' ? editor.document.uri : undefined;
  if (!uri) {
    void vscode.window.showErrorMessage('ShapeScript: open a .ss file to export one of its functions.');
    return undefined;
  }
  const client = await server.ready();
  if (!client) {
    return undefined;
  }
  const root = folderOf(uri);
  const cfg = vscode.workspace.getConfiguration('shapescript');
  const project = readExportTable(root);

  // 1. the function
  let found: Exportable[];
  try {
    found = await exportables(server, uri.toString());
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    server.log.error(`export: asking for the exportable functions: ${why}`);
    void vscode.window.showErrorMessage(`ShapeScript: the server could not list the exportable functions: ${why}`);
    return undefined;
  }
  let fn = args.fn;
  let fnTargets = found.find((e) => e.fn === fn)?.targets;
  if (!fn) {
    if (found.length === 0) {
      void vscode.window.showErrorMessage(`ShapeScript: ${path.basename(uri.fsPath)} has no exportable function: `
        + 'mark one with `@export(hf, vllm, gguf)`, or name it `forward`.');
      return undefined;
    }
    let pick = found[0];
    if (found.length > 1) {
      const line = editor && editor.document.uri.toString() === uri.toString() ? editor.selection.active.line : -1;
      const here = [...found].reverse().find((e) => e.line <= line);
      const items = found.map((e) => ({ label: e.fn, description: e.targets.join(', '), e }));
      const chosen = await vscode.window.showQuickPick(items.sort((a, b) => (a.e === here ? -1 : b.e === here ? 1 : 0)), {
        title: 'ShapeScript: Export… (1/4)', placeHolder: 'The function to export',
      });
      if (!chosen) {
        return undefined;
      }
      pick = chosen.e;
    }
    fn = pick.fn;
    fnTargets = pick.targets;
  }
  const offered = fnTargets && fnTargets.length ? fnTargets : [...TARGETS];

  // 2. the targets
  let targets = args.targets || (args.target ? [args.target] : undefined);
  if (!targets) {
    if (offered.length === 1) {
      targets = offered;
    } else {
      const defaults = cfg.get<string[] | null>('default_targets') || offered;
      const items = offered.map((t) => ({ label: t, description: TARGET_LABELS[t], picked: defaults.includes(t) }));
      const chosen = await vscode.window.showQuickPick(items, {
        title: `ShapeScript: Export ${fn} (2/4)`, placeHolder: 'The targets to export for', canPickMany: true,
      });
      if (!chosen || chosen.length === 0) {
        return undefined;
      }
      targets = chosen.map((c) => c.label);
    }
  }

  // 3. the output folder (one per target, under the one given when there are several)
  let output = args.output;
  if (output === undefined) {
    const setting = cfg.get<string | null>('export.output') || project.output;
    const suggested = setting || (targets.length === 1 ? `exported/${fn}-${targets[0]}` : `exported/${fn}`);
    output = await vscode.window.showInputBox({
      title: `ShapeScript: Export ${fn} (3/4)`,
      prompt: targets.length === 1 ? 'The output folder (relative to the workspace)'
        : `The output folder (relative to the workspace); each target gets a folder inside: ${targets.join(', ')}`,
      value: suggested,
      validateInput: (v) => (v.trim() ? undefined : 'An output folder is needed'),
    });
    if (output === undefined) {
      return undefined;
    }
  }
  output = output.trim();
  const base = path.isAbsolute(output) ? output : root ? path.join(root, output) : output;

  // 4. the weights
  let weights = args.weights;
  let random = args.random;
  if (weights === undefined && random === undefined) {
    const wSetting = cfg.get<string | null>('export.weights') || project.weights;
    const rSetting = cfg.get<boolean | null>('export.randomWeights') ?? project.random_weights;
    const seed = cfg.get<number | null>('export.seed') ?? project.seed ?? 0;
    type Item = vscode.QuickPickItem & { kind2: 'random' | 'file' | 'browse' | 'folder' };
    const items: Item[] = [];
    const randomItem: Item = { label: 'Random weights', description: `seed ${seed}`,
      detail: "each param's initializer (normal(0.02) unless the model says ones, zeros or normal(STD))", kind2: 'random' };
    if (wSetting) {
      items.push({ label: `Weights: ${wSetting}`, description: 'from the settings', kind2: 'file' });
    }
    items.push(randomItem, { label: 'Weights file…', description: '.safetensors or .gguf', kind2: 'browse' },
      { label: 'Checkpoint folder…', description: 'a Hugging Face checkpoint (config.json + safetensors)', kind2: 'folder' });
    if (rSetting && items[0] !== randomItem) {
      items.splice(items.indexOf(randomItem), 1);
      items.unshift(randomItem);
    }
    const chosen = await vscode.window.showQuickPick(items, { title: `ShapeScript: Export ${fn} (4/4)`, placeHolder: 'The weights' });
    if (!chosen) {
      return undefined;
    }
    if (chosen.kind2 === 'random') {
      random = true;
    } else if (chosen.kind2 === 'file') {
      weights = wSetting!;
      random = false;
    } else {
      const folder = chosen.kind2 === 'folder';
      const files = await vscode.window.showOpenDialog({
        title: folder ? 'Checkpoint folder' : 'Weights', canSelectMany: false,
        canSelectFiles: !folder, canSelectFolders: folder,
        filters: folder ? undefined : { weights: ['safetensors', 'gguf'] },
        defaultUri: root ? vscode.Uri.file(root) : undefined,
      });
      if (!files || files.length === 0) {
        return undefined;
      }
      weights = files[0].fsPath;
      random = false;
    }
  }
  if (weights && !path.isAbsolute(weights) && root) {
    weights = path.join(root, weights);
  }
  // a checkpoint of an architecture no table knows: its map file (docs/importing-weights.md)
  let weightsMap = cfg.get<string | null>('export.weightsMap') || project.weights_map || undefined;
  if (weightsMap && !path.isAbsolute(weightsMap) && root) {
    weightsMap = path.join(root, weightsMap);
  }

  // the GGUF file's type (llama.cpp's quantized types; keep: a quantized .gguf's as they came)
  let ggufDtype = args.dtype ?? cfg.get<string | null>('export.gguf.dtype') ?? project.gguf_dtype
    ?? cfg.get<string | null>('export.dtype') ?? project.dtype;
  if (targets.includes('gguf') && args.dtype === undefined) {
    const fromGguf = !random && !!weights && weights.toLowerCase().endsWith('.gguf');
    const items = GGUF_TYPES.filter((t) => t.label !== 'keep' || fromGguf)
      .map((t) => ({ ...t, picked: t.label === (ggufDtype ?? 'f32') }));
    items.sort((a, b) => (a.picked === b.picked ? 0 : a.picked ? -1 : 1));
    const chosen = await vscode.window.showQuickPick(items, {
      title: `ShapeScript: Export ${fn}: the GGUF file's type`, placeHolder: 'llama-quantize\'s types, or f32',
    });
    if (!chosen) {
      return undefined;
    }
    ggufDtype = chosen.label;
  }

  const outputs = targets.map((t) => (targets!.length === 1 ? base : path.join(base, t)));
  let force = args.force;
  if (force === undefined) {
    const full = outputs.filter(nonEmptyDir);
    if (full.length) {
      const pick = await vscode.window.showWarningMessage(
        `ShapeScript: ${full.map((p) => vscode.workspace.asRelativePath(p)).join(', ')} is not empty. Replace what is there?`,
        { modal: true }, 'Replace');
      if (pick !== 'Replace') {
        return undefined;
      }
      force = true;
    }
  }

  const results: ExportResult[] = [];
  await vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification, title: `ShapeScript: exporting ${fn}`, cancellable: true,
  }, async (progress, cancel) => {
    for (let i = 0; i < targets!.length; i++) {
      if (cancel.isCancellationRequested) {
        break;
      }
      const target = targets![i];
      const token = `shapescript-export-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      let last = 0;
      const share = 100 / targets!.length;
      progress.report({ message: `${target}: starting` });
      const sub = client.onProgress(WorkDoneProgress.type, token,
        (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
          if (v.kind === 'end') {
            return;
          }
          const pct = v.percentage ?? last;
          progress.report({ message: v.message ? `${target}: ${v.message}` : undefined,
            increment: Math.max(0, pct - last) * share / 100 });
          last = pct;
        });
      const argument = {
        uri: uri.toString(), fn, target, output: outputs[i], random: !!random, weights: random ? undefined : weights,
        weightsMap: random ? undefined : weightsMap,
        seed: args.seed ?? cfg.get<number | null>('export.seed') ?? undefined,
        dtype: target === 'gguf' ? ggufDtype ?? undefined : args.dtype ?? cfg.get<string | null>('export.dtype') ?? undefined,
        force: !!force,
      };
      server.log.info(`export: ${JSON.stringify(argument)}`);
      try {
        const result = await server.holdingMessages(
          () => client.sendRequest(ExecuteCommandRequest.type,
            { command: EXPORT_COMMAND, arguments: [argument], workDoneToken: token }, cancel) as Promise<ExportResult>,
          (r, m) => !!r && m.message === `shapescript: ${r.message}`);
        results.push(result);
        server.log.info(`export ${target}: ${result.ok ? 'ok' : 'failed'}: ${result.message}`);
      } catch (e) {
        if (cancel.isCancellationRequested) {
          server.log.info(`export ${target}: cancelled`);
          results.push({ ok: false, target, message: 'cancelled (a target already being written is finished by the server)' });
          break;
        }
        const why = e instanceof Error ? e.message : String(e);
        server.log.error(`export ${target}: ${why}`);
        results.push({ ok: false, target, message: `the server failed: ${why}` });
      } finally {
        sub.dispose();
      }
    }
  });

  for (const r of results) {
    void showResult(fn, r);
  }
  return results;
}

async function showResult(fn: string, r: ExportResult) {
  if (r.ok) {
    const where = r.output || '';
    const pick = await vscode.window.showInformationMessage(
      `ShapeScript: exported ${fn} for ${r.target}: ${where}`, 'Open folder');
    if (pick === 'Open folder' && where) {
      const uri = vscode.Uri.file(where);
      if (vscode.workspace.getWorkspaceFolder(uri)) {
        await vscode.commands.executeCommand('revealInExplorer', uri);
      } else {
        await vscode.commands.executeCommand('vscode.openFolder', uri, { forceNewWindow: true });
      }
    }
    return;
  }
  const actions = r.diagnostics && r.diagnostics.length ? ['Show problems', 'Show log'] : ['Show log'];
  const pick = await vscode.window.showWarningMessage(`ShapeScript: ${fn} for ${r.target}: ${r.message}`, ...actions);
  if (pick === 'Show problems') {
    await vscode.commands.executeCommand('workbench.actions.view.problems');
  } else if (pick === 'Show log') {
    await vscode.commands.executeCommand('shapescript.showServerLog');
  }
}
