// Starts `shapescript-lsp` over stdio through vscode-languageclient, restarts it on
// demand and after a crash (with a limit), and tells the user when there is none.
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandler,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  MessageSignature,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageParams,
  ResponseError,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { ServerCommand, resolveServerCommand, searchedPlaces } from './serverCommand';

export const EXPORT_COMMAND = 'shapescript.export';          // the server's command
export const EXPORT_UI_COMMAND = 'shapescript.exportFunction'; // the extension's "Export…"
const CRASH_WINDOW_MS = 3 * 60 * 1000;

/** Restart after a crash, at most `shapescript.server.maxRestarts` times in 3 minutes. */
class RestartLimit implements ErrorHandler {
  private crashes: number[] = [];
  /** Whether the server answered `initialize` once: one that dies before is not restarted
   * (start() reports why), or a broken install would loop. */
  started = false;

  constructor(private readonly manager: ServerManager) {}

  error(_error: Error, _message: unknown, count: number | undefined): ErrorHandlerResult {
    // a broken message now and then is survivable; a stream of them is not
    return { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown };
  }

  closed(): CloseHandlerResult {
    if (!this.started) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const max = vscode.workspace.getConfiguration('shapescript').get<number>('server.maxRestarts', 4);
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < CRASH_WINDOW_MS);
    if (this.crashes.length >= max) {
      const n = this.crashes.length + 1;
      this.manager.log.error(`the server stopped ${n} times within 3 minutes; not restarting it`);
      void vscode.window.showErrorMessage(
        `ShapeScript: the language server stopped ${n} times within 3 minutes and was not restarted.`,
        'Show log', 'Restart server').then((pick) => {
        if (pick === 'Show log') {
          this.manager.log.show(true);
        } else if (pick === 'Restart server') {
          void this.manager.restart();
        }
      });
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    this.crashes.push(now);
    this.manager.log.warn(`the server stopped unexpectedly; restarting it (${this.crashes.length} of ${max})`);
    return { action: CloseAction.Restart, handled: true };
  }
}

/**
 * The channel vscode-languageclient traces into. The client traces only when its trace
 * channel's log level is Trace, which no API can set; this one says Trace while
 * `shapescript.trace.server` is on and writes the trace into the log at Info, so the
 * setting alone turns the trace on and off, as users of other language extensions expect.
 */
function traceChannel(log: vscode.LogOutputChannel, disposables: vscode.Disposable[]): vscode.LogOutputChannel {
  const level = () => (vscode.workspace.getConfiguration('shapescript').get<string>('trace.server', 'off') === 'off'
    ? vscode.LogLevel.Info : vscode.LogLevel.Trace);
  const changed = new vscode.EventEmitter<vscode.LogLevel>();
  disposables.push(changed, vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('shapescript.trace.server')) {
      changed.fire(level());
    }
  }));
  return {
    name: log.name,
    get logLevel() { return level(); },
    onDidChangeLogLevel: changed.event,
    trace: (message: string, ...args: unknown[]) => log.info(message, ...args),
    debug: (message: string, ...args: unknown[]) => log.info(message, ...args),
    info: (message: string, ...args: unknown[]) => log.info(message, ...args),
    warn: (message: string, ...args: unknown[]) => log.warn(message, ...args),
    error: (error: string | Error, ...args: unknown[]) => log.error(error, ...args),
    append: (value: string) => log.append(value),
    appendLine: (value: string) => log.appendLine(value),
    replace: (value: string) => log.replace(value),
    clear: () => log.clear(),
    show: (preserveFocus?: boolean) => log.show(preserveFocus),
    hide: () => log.hide(),
    dispose: () => undefined,
  } as vscode.LogOutputChannel;
}

/**
 * A request VS Code sends just as the client stops (a restart, Export's own, a window
 * closing) fails inside vscode-languageclient 11 with a plain "Starting server failed"
 * instead of its ConnectionInactive, which it would answer with nothing; that error
 * became a notification and a stack trace in the log. A request of a client that is no
 * longer running answers nothing here too, with one line in the log.
 */
export class ShapeScriptClient extends LanguageClient {
  override handleFailedRequest<T>(type: MessageSignature, token: vscode.CancellationToken | undefined,
    error: unknown, defaultValue: T, showNotification?: boolean, throwOnCancel?: boolean): T {
    if (!(error instanceof ResponseError) && this.state !== State.Running) {
      const why = error instanceof Error ? error.message : String(error);
      this.info(`${type.method} was asked while the server stopped (${why}): no answer`);
      return defaultValue;
    }
    return super.handleFailedRequest(type, token, error, defaultValue, showNotification, throwOnCancel);
  }
}

export class ServerManager implements vscode.Disposable {
  client: LanguageClient | undefined;
  server: ServerCommand | undefined;
  /** Exports in flight: their closing server messages are held for the export's own. */
  private exporting = 0;
  private held: ShowMessageParams[] = [];
  private readonly disposables: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeClient = this.changed.event;
  private readonly trace: vscode.LogOutputChannel;

  constructor(readonly context: vscode.ExtensionContext, readonly log: vscode.LogOutputChannel) {
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('shapescript.server.command')) {
        this.log.info('shapescript.server.command changed: restarting the server');
        void this.restart();
      }
    }), this.changed);
    this.trace = traceChannel(log, this.disposables);
  }

  folders(): string[] {
    return (vscode.workspace.workspaceFolders || []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  }

  /** start, stop and restart run one at a time, in the order asked. */
  private queue: Promise<unknown> = Promise.resolve();

  private serial<T>(job: () => Promise<T>): Promise<T> {
    const next = this.queue.then(job, job);
    this.queue = next.catch(() => undefined);
    return next;
  }

  start(): Promise<boolean> {
    return this.serial(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.serial(() => this.doStop());
  }

  restart(): Promise<boolean> {
    return this.serial(async () => {
      this.log.info('restarting the server');
      await this.doStop();
      return this.doStart();
    });
  }

  private async doStart(): Promise<boolean> {
    const setting = vscode.workspace.getConfiguration('shapescript').get<unknown>('server.command');
    const folders = this.folders();
    this.server = resolveServerCommand(setting, folders);
    if (!this.server) {
      this.log.error(`shapescript-lsp was not found; looked in: ${searchedPlaces(folders).join(', ')}`);
      void this.notifyMissing(folders);
      this.changed.fire();
      return false;
    }
    this.log.info(`starting ${[this.server.command, ...this.server.args].join(' ')} (from ${this.server.source})`);
    const exec = {
      command: this.server.command,
      args: this.server.args,
      transport: TransportKind.stdio,
      options: { cwd: folders[0] },
    };
    const serverOptions: ServerOptions = { run: exec, debug: exec };
    const restarts = new RestartLimit(this);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ language: 'shapescript', scheme: 'file' }, { language: 'shapescript', scheme: 'untitled' }],
      outputChannel: this.log, // vscode-languageclient 11 needs a log channel
      traceOutputChannel: this.trace,
      errorHandler: restarts,
      initializationOptions: () => ({ settings: settingsObject() }),
      synchronize: { configurationSection: 'shapescript' },
      middleware: {
        // the server's "Export ▸ hf" lenses go through the extension's Export… (progress,
        // output folder, weights, a result with "Open folder")
        provideCodeLenses: async (document, token, next) => {
          const lenses = await next(document, token);
          for (const lens of lenses || []) {
            if (lens.command && lens.command.command === EXPORT_COMMAND) {
              lens.command = { ...lens.command, command: EXPORT_UI_COMMAND };
            }
          }
          return lenses;
        },
      },
    };
    const client = new ShapeScriptClient('shapescript', 'ShapeScript', serverOptions, clientOptions);
    client.onNotification(ShowMessageNotification.type, (m) => this.showMessage(m));
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        restarts.started = true;
      }
    });
    this.client = client;
    this.changed.fire();
    try {
      await client.start();
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      this.log.error(`the server did not start: ${why}`);
      this.client = undefined;
      void client.dispose().catch(() => undefined);
      // not awaited: activation and restarts don't wait for the user to answer
      void vscode.window.showErrorMessage(
        `ShapeScript: the language server (${this.server.command}) did not start: ${why}`,
        'Show log', 'Open settings').then((pick) => {
        if (pick === 'Show log') {
          this.log.show(true);
        } else if (pick === 'Open settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'shapescript.server.command');
        }
      });
      return false;
    } finally {
      this.changed.fire();
    }
    const info = client.initializeResult?.serverInfo;
    this.log.info(`the server is running${info ? `: ${info.name} ${info.version || ''}`.trimEnd() : ''}`);
    return true;
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.changed.fire();
    if (client) {
      try {
        if (client.state !== State.Stopped) {
          await client.stop(5000); // then the client kills it
        }
      } catch (e) {
        this.log.warn(`stopping the server: ${e instanceof Error ? e.message : String(e)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  /** The running client, or undefined after telling the user why there is none. */
  async ready(): Promise<LanguageClient | undefined> {
    if (this.client && this.client.state === State.Running) {
      return this.client;
    }
    const starting = this.client;
    if (starting && starting.state === State.Starting) {
      await new Promise<void>((resolve) => {
        const d = starting.onDidChangeState(() => { d.dispose(); resolve(); });
      });
      if (this.client === starting && (starting.state as State) === State.Running) {
        return starting;
      }
    }
    const pick = await vscode.window.showErrorMessage('ShapeScript: the language server is not running.',
      'Restart server', 'Show log');
    if (pick === 'Restart server') {
      if (await this.restart()) {
        return this.client;
      }
    } else if (pick === 'Show log') {
      this.log.show(true);
    }
    return undefined;
  }

  private async notifyMissing(folders: string[]) {
    const where = searchedPlaces(folders).join(', ');
    const pick = await vscode.window.showWarningMessage(
      'ShapeScript: the language server `shapescript-lsp` was not found, so there are no diagnostics, hovers, '
      + `quick fixes or exports (highlighting works without it). Looked in: ${where}.`,
      'How to install', 'Open settings', 'Retry');
    if (pick === 'How to install') {
      const readme = vscode.Uri.joinPath(this.context.extensionUri, 'README.md');
      await vscode.commands.executeCommand('markdown.showPreview', readme.with({ fragment: 'installing-the-server' }));
    } else if (pick === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'shapescript.server.command');
    } else if (pick === 'Retry') {
      await this.restart();
    }
  }

  /** Run `job` with the server's own closing message held back; `drop` says which to drop. */
  async holdingMessages<T>(job: () => Promise<T>, drop: (result: T | undefined, m: ShowMessageParams) => boolean): Promise<T> {
    this.exporting++;
    let result: T | undefined;
    try {
      result = await job();
      return result;
    } finally {
      this.exporting--;
      const held = this.held;
      this.held = [];
      for (const m of held) {
        if (!drop(result, m)) {
          this.display(m);
        } else {
          this.log.info(`server: ${m.message}`);
        }
      }
    }
  }

  private showMessage(m: ShowMessageParams) {
    if (this.exporting > 0 && m.message.startsWith('shapescript: ')) {
      this.held.push(m);
      return;
    }
    this.display(m);
  }

  private display(m: ShowMessageParams) {
    switch (m.type) {
      case MessageType.Error:
        void vscode.window.showErrorMessage(m.message);
        break;
      case MessageType.Warning:
        void vscode.window.showWarningMessage(m.message);
        break;
      default:
        void vscode.window.showInformationMessage(m.message);
    }
  }

  dispose() {
    for (const d of this.disposables) {
      d.dispose();
    }
    void this.stop();
  }
}

/** The `shapescript` settings as plain data (what the server reads). */
export function settingsObject(): Record<string, unknown> {
  return JSON.parse(JSON.stringify(vscode.workspace.getConfiguration('shapescript'))) as Record<string, unknown>;
}
