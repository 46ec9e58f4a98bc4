-- ShapeScript for Neovim 0.11+: the `.ss` filetype, the `shapescript-lsp` language server,
-- and `:ShapescriptExport`.
--
--   require('shapescript').setup({
--     cmd = { 'shapescript-lsp' },          -- how to start the server
--     settings = { dims = { D = 512 } },    -- the `shapescript` settings section
--   })
local M = {}

M.defaults = {
  cmd = { 'shapescript-lsp' },
  cmd_cwd = nil,
  root_markers = { 'shapescript.toml', '.git' },
  -- The `shapescript` settings section (the server asks for it): default_targets,
  -- dims = { NAME = value }, export = { output, weights, random_weights, seed, dtype }.
  settings = {},
  init_options = {},
  inlay_hints = true, -- show the shape after each assignment
  codelens = true, -- show "Export ▸ hf | vllm | gguf | litert" over exportable functions
  format_on_save = false, -- format the buffer (`shapescript fmt`'s layout) before each write
}

M.targets = { 'hf', 'vllm', 'gguf', 'litert' }

local function client_for(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = 'shapescript' })[1]
end

--- Parse `:ShapescriptExport` arguments: a target, then key=value options.
--- `hf out=DIR weights=FILE random fn=NAME seed=N dtype=f16 force dim=D=512 tokenizer=DIR`
function M.parse_args(fargs)
  local args = { dims = vim.empty_dict() }
  for _, a in ipairs(fargs) do
    local key, value = a:match('^([%w_]+)=(.*)$')
    if vim.tbl_contains(M.targets, a) then
      args.target = a
    elseif a == 'random' or a == 'force' then
      args[a] = true
    elseif key == 'dim' then
      local name, n = value:match('^([%w_]+)=(%d+)$')
      if not name then
        error('dim takes NAME=VALUE, got ' .. value)
      end
      args.dims[name] = tonumber(n)
    elseif key == 'out' or key == 'output' then
      args.output = value
    elseif key == 'seed' then
      args.seed = tonumber(value)
    elseif key then
      args[key] = value
    else
      error('unknown argument ' .. a .. ': expected a target (hf, vllm, gguf, litert) or key=value')
    end
  end
  return args
end

--- Export the function under the cursor (or the file's only exportable one).
--- `opts`: target (required), fn, output, weights, random, seed, dtype, force, dims.
--- `on_done(err, result)` gets the server's answer: {ok, message, output, diagnostics}.
function M.export(opts, on_done)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    vim.notify('shapescript: no language server is attached to this buffer', vim.log.levels.ERROR)
    return
  end
  if not opts.target then
    vim.notify('shapescript: name a target: ' .. table.concat(M.targets, ', '), vim.log.levels.ERROR)
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local arg = vim.tbl_extend('force', { uri = params.textDocument.uri, position = params.position }, opts)
  client:request('workspace/executeCommand', { command = 'shapescript.export', arguments = { arg } },
    function(err, result)
      if err then
        vim.notify('shapescript: export failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      -- On success the server reports through window/showMessage and $/progress.
      M.last_result = result
      if on_done then
        on_done(err, result)
      end
    end, bufnr)
end

local function on_attach(opts)
  return function(client, bufnr)
    if opts.inlay_hints and client:supports_method('textDocument/inlayHint') then
      vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
    end
    if opts.codelens and client:supports_method('textDocument/codeLens') then
      vim.lsp.codelens.refresh({ bufnr = bufnr })
      vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'TextChanged' }, {
        buffer = bufnr,
        group = vim.api.nvim_create_augroup('shapescript_codelens_' .. bufnr, { clear = true }),
        callback = function()
          vim.lsp.codelens.refresh({ bufnr = bufnr })
        end,
      })
    end
    if opts.format_on_save and client:supports_method('textDocument/formatting') then
      vim.api.nvim_create_autocmd('BufWritePre', {
        buffer = bufnr,
        group = vim.api.nvim_create_augroup('shapescript_format_' .. bufnr, { clear = true }),
        callback = function()
          vim.lsp.buf.format({ bufnr = bufnr, id = client.id, timeout_ms = 5000 })
        end,
      })
    end
    if opts.on_attach then
      opts.on_attach(client, bufnr)
    end
  end
end

function M.setup(opts)
  opts = vim.tbl_deep_extend('force', {}, M.defaults, opts or {})
  vim.filetype.add({ extension = { ss = 'shapescript' } })
  vim.lsp.config('shapescript', {
    cmd = opts.cmd,
    cmd_cwd = opts.cmd_cwd,
    filetypes = { 'shapescript' },
    root_markers = opts.root_markers,
    settings = { shapescript = opts.settings },
    init_options = opts.init_options,
    on_attach = on_attach(opts),
  })
  vim.lsp.enable('shapescript')
  vim.api.nvim_create_user_command('ShapescriptExport', function(cmd)
    local ok, args = pcall(M.parse_args, cmd.fargs)
    if not ok then
      vim.notify('shapescript: ' .. tostring(args), vim.log.levels.ERROR)
      return
    end
    M.export(args)
  end, {
    nargs = '*',
    desc = 'Export the ShapeScript function under the cursor: hf | vllm | gguf | litert [out=DIR] [weights=FILE | random] [dim=N=V]',
    complete = function(lead)
      local words = vim.list_extend(vim.deepcopy(M.targets),
        { 'out=', 'weights=', 'random', 'fn=', 'seed=', 'dtype=', 'force', 'dim=', 'tokenizer=' })
      return vim.tbl_filter(function(w)
        return w:sub(1, #lead) == lead
      end, words)
    end,
  })
end

return M
