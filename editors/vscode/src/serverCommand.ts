// Where `shapescript-lsp` is: the setting, else the workspace's virtualenv, else PATH.
// Plain Node (no `vscode` import), so the unit tests run it directly.
import * as fs from 'fs';
import * as path from 'path';

export type ServerSource = 'setting' | 'workspace .venv' | 'PATH';

export interface ServerCommand {
  command: string;
  args: string[];
  source: ServerSource;
}

export const SERVER_NAME = 'shapescript-lsp';

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) {
      return false;
    }
    if (process.platform === 'win32') {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function candidates(dir: string, platform: string): string[] {
  return platform === 'win32'
    ? [path.join(dir, `${SERVER_NAME}.exe`), path.join(dir, `${SERVER_NAME}.cmd`)]
    : [path.join(dir, SERVER_NAME)];
}

/** The places looked in, in order, for the "not found" message. */
export function searchedPlaces(folders: string[], platform: string = process.platform): string[] {
  const bin = platform === 'win32' ? path.join('.venv', 'Scripts') : path.join('.venv', 'bin');
  return [
    'the setting shapescript.server.command',
    ...folders.map((f) => path.join(f, bin)),
    'PATH',
  ];
}

/**
 * The command that starts the server, or undefined when there is none.
 * `setting` is `shapescript.server.command` ([] or undefined: look for one).
 */
export function resolveServerCommand(
  setting: unknown,
  folders: string[],
  envPath: string | undefined = process.env.PATH,
  platform: string = process.platform,
  executable: (file: string) => boolean = isExecutable,
): ServerCommand | undefined {
  if (Array.isArray(setting) && setting.length > 0 && setting.every((s) => typeof s === 'string') && setting[0]) {
    return { command: setting[0], args: setting.slice(1), source: 'setting' };
  }
  const bin = platform === 'win32' ? path.join('.venv', 'Scripts') : path.join('.venv', 'bin');
  for (const folder of folders) {
    for (const file of candidates(path.join(folder, bin), platform)) {
      if (executable(file)) {
        return { command: file, args: [], source: 'workspace .venv' };
      }
    }
  }
  const sep = platform === 'win32' ? ';' : ':';
  for (const dir of (envPath || '').split(sep)) {
    if (!dir) {
      continue;
    }
    for (const file of candidates(dir, platform)) {
      if (executable(file)) {
        return { command: file, args: [], source: 'PATH' };
      }
    }
  }
  return undefined;
}

/** `shapescript` (the command line) next to the server's program, else on PATH. */
export function resolveCli(server: ServerCommand | undefined, envPath: string | undefined = process.env.PATH,
  platform: string = process.platform, executable: (file: string) => boolean = isExecutable): string | undefined {
  const name = platform === 'win32' ? 'shapescript.exe' : 'shapescript';
  const dirs: string[] = [];
  if (server && path.isAbsolute(server.command)) {
    dirs.push(path.dirname(server.command));
  }
  dirs.push(...(envPath || '').split(platform === 'win32' ? ';' : ':').filter((d) => d));
  for (const dir of dirs) {
    const file = path.join(dir, name);
    if (executable(file)) {
      return file;
    }
  }
  return undefined;
}
