// The `[export]` (and `[export.gguf]`) table of the workspace's `shapescript.toml`: only to show the server's
// own defaults in the Export… dialog (the server reads the file itself). A line-based
// read of `key = "string" | number | true | false`, which is all that table holds.
import * as fs from 'fs';
import * as path from 'path';

export interface ExportDefaults {
  output?: string;
  weights?: string;
  weights_map?: string;
  random_weights?: boolean;
  seed?: number;
  dtype?: string;
  gguf_dtype?: string;  // [export.gguf] dtype
}

export function readExportTable(root: string | undefined): ExportDefaults {
  if (!root) {
    return {};
  }
  let text: string;
  try {
    text = fs.readFileSync(path.join(root, 'shapescript.toml'), 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, unknown> = {};
  let table = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/^\s+|\s+$/g, '');
    const header = /^\[\s*([A-Za-z0-9_.-]+)\s*\]/.exec(line);
    if (header) {
      table = header[1];
      continue;
    }
    if (table !== 'export' && table !== 'export.gguf') {
      continue;
    }
    const kv = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|-?\d+|true|false)\s*(#.*)?$/.exec(line);
    if (!kv) {
      continue;
    }
    const [, name, value] = kv;
    const key = table === 'export.gguf' ? `gguf_${name}` : name;
    if (value.startsWith('"')) {
      try {
        out[key] = JSON.parse(value);
      } catch {
        continue;
      }
    } else if (value.startsWith("'")) {
      out[key] = value.slice(1, -1);
    } else if (value === 'true' || value === 'false') {
      out[key] = value === 'true';
    } else {
      out[key] = Number(value);
    }
  }
  const d: ExportDefaults = {};
  if (typeof out.output === 'string') { d.output = out.output; }
  if (typeof out.weights === 'string') { d.weights = out.weights; }
  if (typeof out.weights_map === 'string') { d.weights_map = out.weights_map; }
  if (typeof out.random_weights === 'boolean') { d.random_weights = out.random_weights; }
  if (typeof out.seed === 'number') { d.seed = out.seed; }
  if (typeof out.dtype === 'string') { d.dtype = out.dtype; }
  if (typeof out.gguf_dtype === 'string') { d.gguf_dtype = out.gguf_dtype.toLowerCase(); }
  return d;
}
