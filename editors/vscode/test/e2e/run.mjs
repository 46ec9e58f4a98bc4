// Drives code-server's VS Code in headless Chromium (playwright-core) through what a
// user does with the extension: open a broken .ss file, read the Problems panel, hover,
// inspect the grammar's scopes, apply the quick fix from the light bulb, export, Go to
// References, F2 rename, Format Document, export a small Llama for GGUF alone at a
// quantized type.
// tests/test_vscode_e2e.py starts code-server, runs this and checks what it wrote.
//
// env: SS_URL (the workbench, with ?folder=), SS_OUT (a folder for result.json and
// screenshots), SS_PROFILE (Chromium's profile folder), SS_CHROMIUM (the browser),
// SS_FILE (the .ss file's name in the workspace), SS_GGUF_FILE (a Llama's .ss file there,
// exported for gguf), SS_GGUF_TYPE (the GGUF type to pick); optionally SS_URL_MISSING (a
// workspace with no server) and SS_URL_CRASH (one whose server dies after each start).
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const out = process.env.SS_OUT;
const fileName = process.env.SS_FILE || 'broken.ss';
const ggufFile = process.env.SS_GGUF_FILE || 'tiny_llama.ss';
const ggufType = process.env.SS_GGUF_TYPE || 'q8_0';
const result = { steps: [], timings: {} };
const t0 = Date.now();
let page;
let context;

function save() {
  result.total_s = (Date.now() - t0) / 1000;
  fs.writeFileSync(path.join(out, 'result.json'), JSON.stringify(result, null, 2));
}

async function step(name, fn) {
  const t = Date.now();
  result.current = name;
  const value = await fn();
  result.timings[name] = (Date.now() - t) / 1000;
  result.steps.push(name);
  return value;
}

/** Wait until `fn` (run in the page) returns a truthy value; that value. */
async function until(what, fn, arg, timeout = 20000, on = page) {
  try {
    const h = await on.waitForFunction(fn, arg, { timeout, polling: 100 });
    return await h.jsonValue();
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split('\n')[0]}`);
  }
}

async function quickInputFocused(label, timeout = 20000) {
  return until(`a focused quick-input row with "${label}"`, (want) => {
    const w = document.querySelector('.quick-input-widget');
    if (!w || w.style.display === 'none') {
      return false;
    }
    const row = w.querySelector('.monaco-list-row.focused');
    return row && row.textContent.includes(want) ? row.textContent : false;
  }, label, timeout);
}

async function runCommand(title) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget .quick-input-box input', { state: 'visible' });
  await page.keyboard.insertText(title);
  await quickInputFocused(title);
  await page.keyboard.press('Enter');
}

async function goTo(line, column) {
  await page.keyboard.press('Control+G');
  await page.waitForSelector('.quick-input-widget .quick-input-box input', { state: 'visible' });
  await page.keyboard.type(`${line}:${column}`);
  await page.keyboard.press('Enter');
  await until(`the cursor at ${line}:${column}`, ([l, c]) => {
    const s = document.querySelector('.statusbar-item[id="status.editor.selection"]');
    return s && s.textContent.includes(`Ln ${l}, Col ${c}`);
  }, [line, column], 10000);
}

/** The value of the quick input's box once it shows one (Export…'s output folder). */
async function inputBoxValue() {
  return until('the output folder box', () => {
    const w = document.querySelector('.quick-input-widget');
    const i = w && w.querySelector('.quick-input-box input');
    return w && w.style.display !== 'none' && i && i.value ? i.value : false;
  });
}

/** The text of the export's result notification (a success or the server's reason). */
async function exportResult(what, fn = 'classify', target = 'hf') {
  return until(what, (want) => {
    const n = [...document.querySelectorAll('.notifications-toasts .notification-list-item')]
      .find((e) => e.textContent.includes(`exported ${want}`) || e.textContent.includes(`${want}:`));
    return n ? n.textContent : false;
  }, `${fn} for ${target}`, 90000);
}

/** The rows of the quick pick showing now, {label: aria-checked}, once a row has `label`
 * (the ticks mean something in a pick of many only: a single pick's rows may keep the
 * attribute of the list's earlier use). */
async function quickPickRows(what, label) {
  return until(what, (want) => {
    const w = document.querySelector('.quick-input-widget');
    if (!w || w.style.display === 'none') {
      return false;
    }
    const rows = {};
    for (const r of w.querySelectorAll('.monaco-list-row')) {
      const name = r.querySelector('.label-name');
      rows[(name ? name.textContent : r.textContent).trim()] = r.getAttribute('aria-checked');
    }
    return want in rows ? rows : false;
  }, label);
}

/** Hover `x` in `y = linear(x, m.w)` with the mouse (the cursor put there first, to
 * find it on screen); the hover's text. The lines may move under the mouse (the code
 * lens above line 8 goes and comes back while a restarted server answers): when the
 * hover shows another name, move away and hover again, as a user would, at most 3 times. */
async function hoverX() {
  let last = '';
  for (let attempt = 1; attempt <= 3; attempt++) {
    await goTo(9, 16);
    // the cursor as drawn on line 9 (it is drawn a frame after the status bar says so;
    // Monaco's lines are not in order in the DOM: the gutter gives the line's top)
    const box = await until('the cursor drawn on line 9', () => {
      const ed = document.querySelector('.part.editor .monaco-editor');
      const cursor = ed && ed.querySelector('.cursors-layer .cursor');
      const gutter = ed && [...ed.querySelectorAll('.margin-view-overlays .line-numbers')].find((g) => g.textContent.trim() === '9');
      if (!cursor || !gutter) {
        return false;
      }
      const c = cursor.getBoundingClientRect();
      const g = gutter.getBoundingClientRect();
      return Math.abs(c.top - g.top) < 2 ? { x: c.left, y: c.top, height: c.height } : false;
    }, undefined, 10000);
    await page.mouse.move(box.x + 3, box.y + box.height / 2);
    await page.mouse.move(box.x + 4, box.y + box.height / 2);
    last = await until('a hover', () => {
      const h = [...document.querySelectorAll('.monaco-hover')].find((e) => e.offsetParent !== null && e.textContent.trim());
      return h && !h.textContent.includes('Loading') ? h.textContent : false;
    }, undefined, 20000).catch(() => '');
    if (last.includes('[b D]')) {
      result.hover_attempts = Math.max(result.hover_attempts || 0, attempt);
      return last;
    }
    await page.mouse.move(5, 400);
    await page.waitForTimeout(500);
  }
  throw new Error(`no hover with the shape of x; the last one: ${JSON.stringify(last)}`);
}

try {
  context = await chromium.launchPersistentContext(process.env.SS_PROFILE, {
    executablePath: process.env.SS_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(20000);

  await step('workbench', async () => {
    await page.goto(process.env.SS_URL);
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    await page.waitForSelector('.explorer-folders-view, .explorer-viewlet', { timeout: 30000 }).catch(() => undefined);
  });

  await step('open file', async () => {
    // from the Explorer, as a user does (Quick Open would wait for the file search)
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: fileName }).first().click();
    await until('the editor with the file', () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      return v && v.textContent.includes('classify');
    });
    // the language mode may read Plain Text until the extensions are scanned
    result.language = await until('the language mode ShapeScript', () => {
      const s = document.querySelector('.statusbar-item[id="status.editor.mode"]');
      return s && s.textContent.trim() === 'ShapeScript' && s.textContent.trim();
    }, undefined, 30000);
  });

  await step('diagnostics', async () => {
    await page.keyboard.press('Control+Shift+M');
    result.problem = await until('the E3306 row in the Problems panel', () => {
      for (const row of document.querySelectorAll('.markers-panel .monaco-list-row')) {
        if (row.textContent.includes('E3306')) {
          const link = row.querySelector('.marker-code a, a.monaco-link, .code-link');
          return { text: row.textContent, link: link ? (link.getAttribute('href') || link.getAttribute('title') || link.textContent) : null,
            linkTag: link ? link.tagName : null };
        }
      }
      return false;
    }, undefined, 45000);
    result.squiggles = await page.$$eval('.monaco-editor .squiggly-error', (s) => s.length);
    result.lenses = await until('the export code lens', () => {
      const l = [...document.querySelectorAll('.part.editor .monaco-editor .codelens-decoration')]
        .map((e) => e.textContent.replace(/\u00a0/g, ' '));
      return l.length ? l : false;
    }, undefined, 15000);
  });

  await step('language status', async () => {
    // the `{}` of the status bar: the running server, by the name it gives
    await page.locator('.statusbar-item[id="status.languageStatus"]').first().hover();
    result.language_status = await until('the language status hover', () => {
      const h = [...document.querySelectorAll('.hover-language-status, .monaco-hover')].find((e) => e.offsetParent !== null
        && e.textContent.includes('shapescript-lsp'));
      return h ? h.textContent : false;
    }, undefined, 15000);
    await page.mouse.move(5, 400);
  });

  await step('hover', async () => {
    result.hover = await hoverX();
    await page.waitForTimeout(600); // the hover fades in
    await page.screenshot({ path: path.join(out, 'screenshot.png') });
    await page.mouse.move(5, 400);
  });

  await step('grammar', async () => {
    result.scopes = {};
    for (const [name, line, col] of [['dim', 1, 1], ['axis', 8, 17]]) {
      await goTo(line, col);
      await runCommand('Developer: Inspect Editor Tokens and Scopes');
      result.scopes[name] = await until('the token inspector', () => {
        const w = document.querySelector('.token-inspect-widget');
        return w && w.textContent.includes('textmate scopes') ? w.innerText : false;
      });
      await page.keyboard.press('Escape');
      await until('the token inspector gone', () => !document.querySelector('.token-inspect-widget'), undefined, 5000)
        .catch(() => undefined);
    }
    // the tokenizer's own colours: spans with nothing but mtk classes, several of them
    result.mtk = await page.$$eval('.part.editor .view-lines span span', (spans) =>
      [...new Set(spans.filter((s) => /^(mtk\d+\s*)+$/.test(s.className)).map((s) => s.className))]);
  });

  await step('explain', async () => {
    await goTo(8, 13);
    await runCommand('ShapeScript: Explain error under cursor');
    result.explain_tab = await until('the docs page in a Markdown preview', () => {
      const tab = [...document.querySelectorAll('.tabs-container .tab')].find((t) => /Preview serving-engines\.md/.test(t.textContent));
      return tab ? tab.textContent : false;
    });
    await page.locator('.tabs-container .tab', { hasText: 'Preview serving-engines.md' })
      .locator('.codicon-close').first().click({ force: true });
    await until('the preview closed', () =>
      ![...document.querySelectorAll('.tabs-container .tab')].some((t) => t.textContent.includes('Preview')), undefined, 10000);
    await page.locator('.tabs-container .tab', { hasText: fileName }).first().click();
  });

  await step('quick fix', async () => {
    // As a user does: put the cursor in the error, wait for the light bulb (VS Code has
    // asked the server and has a fix), then Control+. and the keyboard. VS Code 1.100 may
    // answer "No code actions available" from a request for an earlier cursor position
    // (seen under load, with the server's log showing the action sent for the new one):
    // then, as a user would, move away, come back and press it again.
    const want = 'Make `m` the first parameter';
    result.quick_fix_attempts = 0;
    result.lightbulb = [];
    for (;;) {
      result.quick_fix_attempts++;
      if (result.quick_fix_attempts > 1) {
        await goTo(1, 1);
        await page.waitForTimeout(500);
      }
      await goTo(8, 13);
      result.lightbulb.push(await until('the light bulb', () => {
        const b = document.querySelector('.part.editor .monaco-editor [class*="codicon-light"]');
        return b && b.offsetParent !== null ? b.className : false;
      }, undefined, 10000).catch((e) => `none: ${e.message}`));
      await page.keyboard.press('Control+.');
      const seen = await until('the quick-fix menu or "no code actions"', () => {
        const rows = document.querySelectorAll('.action-widget .monaco-list-row');
        if (rows.length && rows[0].offsetParent !== null) {
          return 'menu';
        }
        const m = document.querySelector('.monaco-editor-overlaymessage');
        return m && m.textContent.includes('No code actions') ? 'none' : false;
      }, undefined, 20000);
      if (seen === 'menu') {
        break;
      }
      if (result.quick_fix_attempts >= 3) {
        throw new Error('"No code actions available" three times');
      }
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
    result.actions = await page.$$eval('.action-widget .monaco-list-row', (rows) => rows.map((r) => r.textContent));
    for (let i = 0; i < 12; i++) {
      const focused = await page.$eval('.action-widget .monaco-list-row.focused', (r) => r.textContent).catch(() => '');
      if (focused.includes(want)) {
        break;
      }
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    result.fixed_text = await until('the fixed signature in the editor', () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      const text = v ? v.textContent.replace(/\u00a0/g, ' ') : '';
      return text.includes('fn classify(m: Classifier, x: [b D])') ? text : false;
    });
    await page.keyboard.press('Control+S');
    result.problems_after = await until('the E3306 row gone', () => {
      const rows = [...document.querySelectorAll('.markers-panel .monaco-list-row')].map((r) => r.textContent);
      return rows.some((t) => t.includes('E3306')) ? false : { rows };
    }, undefined, 20000);
  });

  await step('export', async () => {
    await runCommand('ShapeScript: Export…');
    result.export_output_default = await inputBoxValue();
    await page.keyboard.press('Enter');
    await quickInputFocused('Random weights');
    await page.keyboard.press('Enter');
    result.export_message = await exportResult('the export result');
  });

  await step('export from the lens', async () => {
    // the server's "Export ▸ hf" lens runs Export… for its function and target; the
    // folder is there now, so it asks before replacing it
    await runCommand('Notifications: Clear All Notifications');
    await until('no notifications', () => document.querySelectorAll('.notifications-toasts .notification-list-item').length === 0,
      undefined, 10000);
    await page.locator('.part.editor .codelens-decoration a', { hasText: 'Export' }).first().click();
    result.lens_output_default = await inputBoxValue();
    await page.keyboard.press('Enter');
    await quickInputFocused('Random weights');
    await page.keyboard.press('Enter');
    result.replace_dialog = await until('the "replace?" dialog', () => {
      const d = document.querySelector('.monaco-dialog-box');
      return d ? d.textContent : false;
    });
    await page.locator('.monaco-dialog-box .monaco-button', { hasText: 'Replace' }).first().click();
    result.lens_export_message = await exportResult('the second export result');
  });

  await step('restart and log', async () => {
    await runCommand('ShapeScript: Restart server');
    await runCommand('ShapeScript: Show server log');
    // the whole window's height for the channel: its last lines must hold the restart even
    // when something else is logged beside it
    await runCommand('View: Toggle Maximized Panel');
    result.log_text = await until('the restart in the ShapeScript output channel', () => {
      const v = document.querySelector('.panel .output-view, .panel [id="workbench.panel.output"]');
      const text = v ? v.textContent.replace(/\u00a0/g, ' ') : '';
      // the channel shows its last lines: the restart, the new start, the new server running
      return /restarting the server[\s\S]*starting .*\(from workspace \.venv\)[\s\S]*the server is running/.test(text)
        ? text : false;
    }, undefined, 30000);
    await runCommand('View: Toggle Maximized Panel');
    // the new server answers: a hover again
    await page.locator('.tabs-container .tab', { hasText: fileName }).first().click();
    await page.mouse.move(5, 400);
    await until('the lens from the new server', () =>
      [...document.querySelectorAll('.part.editor .codelens-decoration')].some((e) => e.textContent.includes('Export')),
    undefined, 20000);
    result.hover_after_restart = await hoverX();
    await page.mouse.move(5, 400);
  });

  await step('references', async () => {
    // Go to References (Shift+F12) on the dim `D`: the peek view lists its two uses (VS Code
    // leaves the declaration out, and goes straight to a lone reference without a peek)
    await goTo(1, 5);
    await page.keyboard.press('Shift+F12');
    result.references = await until('the references peek view', () => {
      const w = document.querySelector('.peekview-widget');
      const rows = w ? [...w.querySelectorAll('.monaco-list-row')].map((r) => r.textContent.replace(/\u00a0/g, ' ')) : [];
      const head = w ? (w.querySelector('.head') || w).textContent.replace(/\u00a0/g, ' ') : '';
      return rows.length ? { head, rows } : false;
    }, undefined, 20000);
    await page.keyboard.press('Escape');
    await until('the peek view closed', () => !document.querySelector('.peekview-widget'), undefined, 10000)
      .catch(() => undefined);
  });

  await step('rename', async () => {
    // F2 on the local `y`, a new name typed, Enter: every use renamed; then saved
    await goTo(9, 5);
    await page.keyboard.press('F2');
    // the rename box, focused, with the old name (from prepareRename) selected
    result.rename_placeholder = await until('the focused rename box', () => {
      const a = document.activeElement;
      return a && a.closest && a.closest('.rename-box') && a.value ? a.value : false;
    }, undefined, 20000);
    await page.keyboard.insertText('logits');
    await page.keyboard.press('Enter');
    result.renamed_text = await until('the renamed local in the editor', () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      const text = v ? v.textContent.replace(/\u00a0/g, ' ') : '';
      return text.includes('logits = linear(x, m.w)') && text.includes('return logits') ? text : false;
    });
    await page.keyboard.press('Control+S');
  });

  await step('format', async () => {
    // Format Document on a file written carelessly, then saved
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'ugly.ss' }).first().click();
    await until('the editor with ugly.ss', () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      return v && v.textContent.replace(/\u00a0/g, ' ').includes('fn f(x:[D])->[D]:');
    });
    await until('ugly.ss in ShapeScript mode', () => {
      const s = document.querySelector('.statusbar-item[id="status.editor.mode"]');
      return s && s.textContent.trim() === 'ShapeScript';
    }, undefined, 30000);
    await runCommand('Format Document');
    result.formatted_text = await until('the formatted text in the editor', () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      const text = v ? v.textContent.replace(/\u00a0/g, ' ') : '';
      return text.includes('fn f(x: [D]) -> [D]:') ? text : false;
    });
    await page.keyboard.press('Control+S');
    await until('ugly.ss saved', () => {
      const tab = [...document.querySelectorAll('.tabs-container .tab')].find((t) => t.textContent.includes('ugly.ss'));
      return tab && !tab.classList.contains('dirty');
    }, undefined, 10000);
  });

  await step('export gguf', async () => {
    // a small Llama marked @export(hf, gguf): Export… with the GGUF target alone (hf
    // unticked in the targets pick), random weights, and a quantized type from the GGUF
    // type pick; the test reads the file's tensor types
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: ggufFile }).first().click();
    await until(`the editor with ${ggufFile}`, () => {
      const v = document.querySelector('.part.editor .monaco-editor .view-lines');
      return v && v.textContent.replace(/\u00a0/g, ' ').includes('model Attention:');
    });
    await until(`${ggufFile} in ShapeScript mode`, () => {
      const s = document.querySelector('.statusbar-item[id="status.editor.mode"]');
      return s && s.textContent.trim() === 'ShapeScript';
    }, undefined, 30000);
    await runCommand('Notifications: Clear All Notifications');
    await until('no notifications', () => document.querySelectorAll('.notifications-toasts .notification-list-item').length === 0,
      undefined, 10000);
    await runCommand('ShapeScript: Export…');
    result.gguf_targets_offered = await quickPickRows('the targets pick', 'gguf');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Hugging Face' }).first().click();
    result.gguf_targets = await until('gguf alone ticked', () => {
      const rows = [...document.querySelectorAll('.quick-input-widget .monaco-list-row')];
      const state = Object.fromEntries(rows.map((r) => [(r.querySelector('.label-name') || r).textContent.trim(),
        r.getAttribute('aria-checked')]));
      return state.hf === 'false' && state.gguf === 'true' ? state : false;
    });
    await page.keyboard.press('Enter');
    result.gguf_output_default = await inputBoxValue();
    await page.keyboard.press('Enter');
    await quickInputFocused('Random weights');
    await page.keyboard.press('Enter');
    // the GGUF file's type: every type offered (no `keep`: the weights are no .gguf)
    result.gguf_types = Object.keys(await quickPickRows('the GGUF type pick', 'q4_k_m'));
    await page.keyboard.insertText(ggufType);
    await quickInputFocused(ggufType);
    await page.keyboard.press('Enter');
    result.gguf_export_message = await exportResult('the GGUF export result', 'forward', 'gguf');
  });

  // Then, in the same browser tab, a workspace with no server anywhere (the
  // notification and its "How to install"), and one whose server dies after each start
  // (restarted once, as maxRestarts 1 says, then not).
  const missing = async () => {
    const p = page;
    await p.goto(process.env.SS_URL_MISSING);
    await p.waitForSelector('.monaco-workbench', { timeout: 60000 });
    result.missing_message = await until('the "not found" notification', () => {
      const n = [...document.querySelectorAll('.notification-list-item')].find((e) => e.textContent.includes('was not found'));
      return n ? n.textContent : false;
    }, undefined, 45000, p);
    await p.locator('.notification-list-item .monaco-button', { hasText: 'How to install' }).first().click();
    result.install_tab = await until('the README in a Markdown preview', () => {
      const tab = [...document.querySelectorAll('.tabs-container .tab')].find((t) => t.textContent.includes('Preview README.md'));
      return tab ? tab.textContent : false;
    }, undefined, 20000, p);
  };
  const crashing = async () => {
    const p = page;
    await p.goto(process.env.SS_URL_CRASH);
    await p.waitForSelector('.monaco-workbench', { timeout: 60000 });
    result.crash_message = await until('the "not restarted" notification', () => {
      const n = [...document.querySelectorAll('.notification-list-item')].find((e) => e.textContent.includes('was not restarted'));
      return n ? n.textContent : false;
    }, undefined, 60000, p);
    await p.waitForTimeout(2500); // time for a restart that should not come
  };
  if (process.env.SS_URL_MISSING && process.env.SS_URL_CRASH) {
    await step('no server', missing);
    await step('crash limit', crashing);
  }
  // leave the last window, so its extension host ends and its log reaches the disk
  await page.goto('about:blank');
  result.ok = true;
} catch (e) {
  result.ok = false;
  result.error = `${result.current}: ${e && e.message ? e.message : String(e)}`;
  try {
    await page.screenshot({ path: path.join(out, 'failure.png') });
    result.notifications = await page.$$eval('.notification-list-item', (n) => n.map((e) => e.textContent));
  } catch {
    // the page is gone: the error says why
  }
} finally {
  save();
  if (context) {
    await context.close().catch(() => undefined);
  }
}
process.exit(result.ok ? 0 : 1);
